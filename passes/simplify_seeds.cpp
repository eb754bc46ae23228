// The Jacobian-seed rules of simplify. jacrev/jacfwd push an identity (the standard basis) through
// the linear map, so the staged Jaxpr multiplies an n x n identity, or a diagonal I * broadcast(v),
// densely. These rules turn such products into O(size of the other operand) work:
//   dot_general(I, X) -> X with the contracted dim moved into the identity's place,
//   dot_general(I * bcast(v), X) -> broadcast(v) * (the same),  transpose(I) -> I.
// Identities are constants checked once per TensorImpl, or convert(eq(iota_0, iota_1)) with
// either iota possibly a broadcast 1-d iota.
#include "fluxion/lax.hpp"
#include "passes/simplify.hpp"

namespace fluxion::passes {
namespace simplify_seeds {

using simplify_detail::Sweep;
using Axes = std::vector<int64_t>;

bool is_square_matrix(const AbstractValue& a) { return a.ndim() == 2 && a.shape[0] == a.shape[1]; }

/// True when `a` is a 1-d iota (an equation, or a constant folded from one).
bool is_iota_vector(const Sweep& s, const Atom& a) {
  if (s.aval(a).ndim() != 1) return false;
  if (Tensor c = s.constant(a); c.defined()) return simplify_detail::constant_facts(c).iota;
  return s.produced_by(a, indexing_family::iota_p()) != nullptr;
}

/// The dim that `a` counts along when `a` holds each element's index in that dim: an iota, or a
/// broadcast_in_dim of a 1-d iota.
std::optional<int64_t> index_dim(const Sweep& s, const Atom& a) {
  if (const Equation* i = s.produced_by(a, indexing_family::iota_p()))
    return i->params->as<indexing_family::IotaParams>().dimension;
  const Equation* b = s.produced_by(a, shape_family::broadcast_in_dim_p());
  if (!b || !is_iota_vector(s, b->inputs[0])) return std::nullopt;
  return b->params->as<shape_family::BroadcastInDimParams>().broadcast_dimensions[0];
}

/// True when `a` is an n x n identity matrix: a constant with those values, or
/// eq(index along dim 0, index along dim 1), possibly converted.
bool is_identity(const Sweep& s, const Atom& a) {
  if (!is_square_matrix(s.aval(a))) return false;
  if (Tensor c = s.constant(a); c.defined()) return simplify_detail::constant_facts(c).identity;
  Atom mask = a;
  if (const Equation* cv = s.produced_by(a, conversion_family::convert_element_type_p())) mask = cv->inputs[0];
  const Equation* eq = s.produced_by(mask, binary_family::eq_p());
  if (!eq || s.aval(eq->inputs[0]).shape != s.aval(a).shape || s.aval(eq->inputs[1]).shape != s.aval(a).shape)
    return false;
  const std::optional<int64_t> d0 = index_dim(s, eq->inputs[0]), d1 = index_dim(s, eq->inputs[1]);
  return d0 && d1 && *d0 != *d1;
}

/// A diagonal matrix diag(v): `scale` is a rank-0 or length-n atom, absent for the identity.
struct Diagonal {
  std::optional<Atom> scale;
};

/// `a` as a diagonal: an identity, or an identity times a rank-0 value or a vector broadcast
/// along either dim (I[i,j] v[j] = I[i,j] v[i]).
std::optional<Diagonal> diagonal_of(const Sweep& s, const Atom& a) {
  if (is_identity(s, a)) return Diagonal{};
  const Equation* m = s.produced_by(a, binary_family::mul_p());
  if (!m || !is_square_matrix(s.aval(a))) return std::nullopt;
  const int64_t n = s.aval(a).shape[0];
  for (size_t i = 0; i < 2; ++i) {
    if (!is_identity(s, m->inputs[i])) continue;
    const Atom& other = m->inputs[1 - i];
    if (std::optional<Atom> r = s.rank0(other)) return Diagonal{*r};
    const Equation* b = s.produced_by(other, shape_family::broadcast_in_dim_p());
    if (!b) continue;
    const Atom& v = b->inputs[0];
    const Axes dims = b->params->as<shape_family::BroadcastInDimParams>().broadcast_dimensions;
    if (s.aval(v).shape == Shape{n} && dims.size() == 1) return Diagonal{v};
  }
  return std::nullopt;
}

// dot_general with a diagonal operand D = diag(v) contracted over one of its dims against dim k
// of X (no batch dims): the result is X with dim k moved to D's free-dim position (first when D
// is the lhs, last when it is the rhs), scaled by v along that dim.
std::optional<Atom> diagonal_product(Sweep& s, const Equation& e, const AbstractValue& out) {
  if (!e.params->as<dot_general_family::DotGeneralParams>().batch.first.empty()) return std::nullopt;
  const AxisPair contract = e.params->as<dot_general_family::DotGeneralParams>().contract;
  for (size_t side = 0; side < 2; ++side) {
    const Axes& d_dims = side == 0 ? contract.first : contract.second;
    const Axes& x_dims = side == 0 ? contract.second : contract.first;
    if (d_dims.size() != 1) continue;
    std::optional<Diagonal> diag = diagonal_of(s, e.inputs[side]);
    if (!diag) continue;
    const Atom x = e.inputs[1 - side];
    const int64_t rank = s.aval(x).ndim(), k = x_dims[0];
    Axes perm;
    if (side == 0) perm.push_back(k);
    for (int64_t d = 0; d < rank; ++d)
      if (d != k) perm.push_back(d);
    if (side == 1) perm.push_back(k);
    std::vector<Atom> args{x};
    if (diag->scale) args.push_back(*diag->scale);
    const int64_t scaled_axis = side == 0 ? 0 : rank - 1;
    auto build = [&](const std::vector<Tensor>& xs) {
      Tensor y = xs[0];
      for (size_t i = 0; i < perm.size(); ++i)
        if (perm[i] != static_cast<int64_t>(i)) {
          y = lax::transpose(y, perm);
          break;
        }
      if (xs.size() == 1) return y;
      Tensor v = xs[1].ndim() == 0 ? xs[1] : lax::broadcast_in_dim(xs[1], out.shape, {scaled_axis});
      return side == 0 ? lax::mul(v, y) : lax::mul(y, v);
    };
    if (std::optional<Atom> r = s.emit(out, args, build)) return r;
  }
  return std::nullopt;
}

std::optional<Atom> identity_transpose(Sweep& s, const Equation& e, const AbstractValue&) {
  return is_identity(s, e.inputs[0]) ? std::optional<Atom>(e.inputs[0]) : std::nullopt;
}

}  // namespace simplify_seeds
}  // namespace fluxion::passes
