// The sibling-product rule of simplify.
//
// Two matrix-vector products that share their matrix (the same variable, in the same operand
// position, with equal params and no batch dims) and whose vectors have equal avals become one
// product with the two vectors stacked as columns: the matrix is read once instead of twice. A
// Hessian-vector product by forward over reverse mode computes X w and X v this way (measured:
// bench/RESULTS.md). The first product's
// equation is rewritten when the second's vector is already defined; the second's output is then
// replaced by its column of the stacked product (Sweep::replace_later), and its equation dropped.
#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"
#include "passes/simplify.hpp"

namespace fluxion::passes {
namespace simplify_siblings {

using simplify_detail::Sweep;

/// Shared matrices smaller than this many elements are left alone: reading them twice is cheap,
/// and two small GEMVs beat a concatenation, a thin product and two slices.
constexpr int64_t kMinSharedElements = int64_t(1) << 16;

/// The position (0: lhs, 1: rhs) of the vector operand of a dot_general with no batch dims whose
/// other operand is at least kMinSharedElements large, or -1.
int vector_side(const Sweep& s, const Equation& e) {
  if (e.primitive != &dot_general_family::dot_general_p() ||
      !e.params->as<dot_general_family::DotGeneralParams>().batch.first.empty())
    return -1;
  const AbstractValue l = s.aval(e.inputs[0]), r = s.aval(e.inputs[1]);
  if (r.shape.size() == 1 && l.shape.size() >= 2 && l.shape.num_elements() >= kMinSharedElements) return 1;
  if (l.shape.size() == 1 && r.shape.size() >= 2 && r.shape.num_elements() >= kMinSharedElements) return 0;
  return -1;
}

std::optional<Atom> sibling_products(Sweep& s, const Equation& e, const AbstractValue& out) {
  const int side = vector_side(s, e);
  if (side < 0 || e.inputs[1 - side].is_literal()) return std::nullopt;
  const Atom shared = e.inputs[1 - side], first = e.inputs[side];
  for (const Equation* later : s.later_readers(shared)) {
    if (later->primitive != e.primitive || later->outputs.size() != 1 || !later->params->equals(*e.params)) continue;
    if (vector_side(s, *later) != side || later->inputs[1 - side].is_literal() ||
        later->inputs[1 - side].var != shared.var)
      continue;
    const std::optional<Atom> second = s.available(later->inputs[side]);
    if (!second || s.aval(*second) != s.aval(first)) continue;
    // The vectors as the columns of a [k, 2] operand: its contracting dim 0 is theirs, and the
    // product's new dim (last for a rhs, first for a lhs) indexes the two results.
    const Params& params = *e.params;
    std::vector<int64_t> dims(out.shape.dims());
    dims.insert(side == 1 ? dims.end() : dims.begin(), 2);
    const AbstractValue both_aval{Shape(dims), out.dtype};
    const std::optional<Atom> both = s.emit(both_aval, {shared, first, *second}, [&](const std::vector<Tensor>& x) {
      const Tensor columns = fluxion::stack({x[1], x[2]}, 1);
      const AxisPair& contract = params.as<dot_general_family::DotGeneralParams>().contract;
      return side == 1 ? lax::dot_general(x[0], columns, contract, {{}, {}})
                       : lax::dot_general(columns, x[0], contract, {{}, {}});
    });
    if (!both) return std::nullopt;
    const int64_t pair_dim = side == 1 ? static_cast<int64_t>(dims.size()) - 1 : 0;
    auto column = [&](int64_t j) {
      return s.emit(out, {*both}, [&](const std::vector<Tensor>& x) {
        std::vector<int64_t> start(dims.size(), 0), limit(dims);
        start[static_cast<size_t>(pair_dim)] = j, limit[static_cast<size_t>(pair_dim)] = j + 1;
        return lax::squeeze(lax::slice(x[0], start, limit, {}), {pair_dim});
      });
    };
    const std::optional<Atom> mine = column(0), theirs = column(1);
    if (!mine || !theirs) return std::nullopt;
    s.replace_later(later->outputs[0], *theirs);
    return mine;
  }
  return std::nullopt;
}

}  // namespace simplify_siblings
}  // namespace fluxion::passes
