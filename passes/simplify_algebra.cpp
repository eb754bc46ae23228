// The algebraic rules of simplify: units (x*1, x+(-0), x-(+0), x/1, x*-1), double negation,
// negations absorbed by add/sub, movement that changes nothing, transpose/reshape/broadcast chains,
// size-1 broadcasts as reshapes, select on a known predicate, +2^k factors moved past a sum, a + a
// as a * 2 and scalar factors folded where exact. "Ones"/"zeros" are any splat constant.
// Every rule gives eager evaluation's values for every input (±0, ±inf, NaN, subnormals, overflow;
// only a NaN's sign may differ), except that a product with swapped operands (transpose chains)
// and a sum scaled after it (scaling_past_sum) may accumulate in another order. So never x*0 -> 0
// (NaN and inf must propagate), x+0 -> x (-0 + 0 is +0), x-x -> 0 (inf - inf is NaN), (x*2)*0.5
// -> x (x*2 overflows), sum(neg x) -> neg(sum x) (a sum that cancels to +0 would be -0).
#include <algorithm>
#include <cmath>
#include <limits>

#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"
#include "passes/simplify.hpp"

namespace fluxion::passes {
namespace simplify_algebra {

using Axes = std::vector<int64_t>;

bool is_value(const std::optional<double>& v, double x) { return v && *v == x; }

bool is_identity_permutation(const Axes& perm) {
  for (size_t k = 0; k < perm.size(); ++k)
    if (perm[k] != static_cast<int64_t>(k)) return false;
  return true;
}

/// Primitives that compute operand 0 unchanged whenever the output aval equals its aval: a
/// broadcast/reshape/squeeze/expand_dims/slice/dynamic_slice to the same shape (starts are then 0),
/// a conversion to the same dtype, a reduction over no axes, a concatenation of one operand.
bool unchanged_when_same_aval(const Primitive* p) {
  for (const Primitive* q :
       {&shape_family::broadcast_in_dim_p(), &shape_family::reshape_p(), &shape_family::squeeze_p(),
        &shape_family::expand_dims_p(), &indexing_family::slice_p(), &indexing_family::dynamic_slice_p(),
        &conversion_family::convert_element_type_p(), &reduction_family::reduce_sum_p(),
        &reduction_family::reduce_max_p(), &reduction_family::reduce_min_p(), &reduction_family::reduce_prod_p(),
        &indexing_family::concatenate_p()})
    if (p == q) return true;
  return false;
}

bool is_reshape_like(const Primitive* p) {
  return p == &shape_family::reshape_p() || p == &shape_family::squeeze_p() || p == &shape_family::expand_dims_p();
}

Result same_aval_identity(Sweep& s, const Equation& e, const AbstractValue& out) {
  const Primitive* p = e.primitive;
  if (!unchanged_when_same_aval(p) || (p == &indexing_family::concatenate_p() && e.inputs.size() != 1))
    return std::nullopt;
  return s.aval(e.inputs[0]) == out ? Result(e.inputs[0]) : std::nullopt;
}

Result overwriting_update(Sweep& s, const Equation& e, const AbstractValue& out) {
  return s.aval(e.inputs[1]) == out ? Result(e.inputs[1]) : std::nullopt;
}

/// True when adding `c` (subtracting it, when `subtract`) leaves every x as it is: a float -0
/// added or +0 subtracted (x + +0 and x - -0 are +0 for x = -0), an integer 0 either way.
bool is_additive_unit(const Sweep& s, const Atom& c, bool subtract) {
  const std::optional<double> v = s.splat(c);
  if (!v || *v != 0) return false;
  return !is_floating(s.aval(c).dtype) || std::signbit(*v) != subtract;
}

// x*1, 1*x, x*-1 -> neg x, x+(-0), (-0)+x, x-(+0), x/1, neg(neg x). The kept operand must already
// have the output's aval (a rank-0 x times a ones array is left alone).
Result units(Sweep& s, const Equation& e, const AbstractValue& out) {
  const Primitive* p = e.primitive;
  auto if_same = [&](const Atom& x) -> Result { return s.aval(x) == out ? Result(x) : std::nullopt; };
  if (p == &unary_family::neg_p()) {
    if (const Equation* inner = s.produced_by(e.inputs[0], unary_family::neg_p())) return if_same(inner->inputs[0]);
    return std::nullopt;
  }
  if (e.inputs.size() != 2) return std::nullopt;
  if (p == &binary_family::mul_p() || p == &binary_family::add_p()) {
    for (size_t i = 0; i < 2; ++i) {
      const Atom &x = e.inputs[i], &c = e.inputs[1 - i];
      if (s.aval(x) != out) continue;
      if (p == &binary_family::add_p() ? is_additive_unit(s, c, false) : is_value(s.splat(c), 1)) return x;
      if (p == &binary_family::mul_p() && is_value(s.splat(c), -1))
        return s.emit(out, {x}, [](const std::vector<Tensor>& xs) { return lax::neg(xs[0]); });
    }
  }
  if ((p == &binary_family::sub_p() && is_additive_unit(s, e.inputs[1], true)) ||
      (p == &binary_family::div_p() && is_value(s.splat(e.inputs[1]), 1)))
    return if_same(e.inputs[0]);
  return std::nullopt;
}

// The permutation that swaps a dot_general's lhs-free and rhs-free output dims (batch dims stay
// first): transpose(dot_general(a, b), it) is dot_general(b, a).
Axes swapped_product_permutation(Sweep& s, const Equation& dot) {
  const AxisPair contract = dot.params->as<dot_general_family::DotGeneralParams>().contract;
  const AxisPair batch = dot.params->as<dot_general_family::DotGeneralParams>().batch;
  const int64_t nb = static_cast<int64_t>(batch.first.size());
  const int64_t nlf = s.aval(dot.inputs[0]).ndim() - nb - static_cast<int64_t>(contract.first.size());
  const int64_t nrf = s.aval(dot.inputs[1]).ndim() - nb - static_cast<int64_t>(contract.second.size());
  Axes swapped;
  for (int64_t k = 0; k < nb; ++k) swapped.push_back(k);
  for (int64_t k = 0; k < nrf; ++k) swapped.push_back(nb + nlf + k);
  for (int64_t k = 0; k < nlf; ++k) swapped.push_back(nb + k);
  return swapped;
}

Tensor swapped_product(const Tensor& a, const Tensor& b, const Params& params) {
  const AxisPair contract = params.as<dot_general_family::DotGeneralParams>().contract;
  const AxisPair batch = params.as<dot_general_family::DotGeneralParams>().batch;
  return lax::dot_general(b, a, AxisPair{contract.second, contract.first}, AxisPair{batch.second, batch.first});
}

// How a value is rebuilt in transposed layout (transpose(v, q)) without a transpose: a rank-0
// value as is, the operand of a transpose that q undoes, a broadcast with permuted dims, a
// product with swapped operands, or an elementwise op (used only there) of such values.
struct Transposed {
  enum Kind { as_is, untransposed, rebroadcast, product, elementwise } kind = as_is;
  Axes dims;                         // rebroadcast: new broadcast_dimensions
  const Equation* eqn = nullptr;     // product, elementwise
  std::vector<Transposed> operands;  // elementwise
  bool removes_transpose = false;    // some leaf is an undone transpose or a product
};

std::optional<Transposed> plan_transposed(Sweep& s, const Atom& a, const Axes& q, const Axes& inverse,
                                          std::vector<Atom>& args, int depth) {
  Transposed t;
  if (s.aval(a).ndim() == 0) {
    args.push_back(a);
    return t;
  }
  if (const Equation* tr = s.produced_by(a, shape_family::transpose_p())) {
    const Axes p = tr->params->as<shape_family::TransposeParams>().permutation;
    Axes composed;
    for (int64_t k : q) composed.push_back(p[static_cast<size_t>(k)]);
    if (!is_identity_permutation(composed)) return std::nullopt;
    args.push_back(tr->inputs[0]);
    t.kind = Transposed::untransposed;
    t.removes_transpose = true;
    return t;
  }
  if (const Equation* b = s.produced_by(a, shape_family::broadcast_in_dim_p())) {
    for (int64_t d : b->params->as<shape_family::BroadcastInDimParams>().broadcast_dimensions)
      t.dims.push_back(inverse[static_cast<size_t>(d)]);
    if (!std::is_sorted(t.dims.begin(), t.dims.end())) return std::nullopt;  // dims are distinct
    args.push_back(b->inputs[0]);
    t.kind = Transposed::rebroadcast;
    return t;
  }
  const Equation* e = s.producer(a);
  if (!e || s.uses(a) != 1 || e->outputs.size() != 1) return std::nullopt;  // never duplicate work
  if (e->primitive == &dot_general_family::dot_general_p() && swapped_product_permutation(s, *e) == q) {
    args.push_back(e->inputs[0]);
    args.push_back(e->inputs[1]);
    t.kind = Transposed::product;
    t.eqn = e;
    t.removes_transpose = true;
    return t;
  }
  if (!e->primitive->traits.elementwise || depth == 0) return std::nullopt;
  t.kind = Transposed::elementwise;
  t.eqn = e;
  for (const Atom& x : e->inputs) {
    std::optional<Transposed> o = plan_transposed(s, x, q, inverse, args, depth - 1);
    if (!o) return std::nullopt;
    t.removes_transpose = t.removes_transpose || o->removes_transpose;
    t.operands.push_back(std::move(*o));
  }
  return t;
}

Tensor build_transposed(const Transposed& t, const std::vector<Tensor>& xs, size_t& next, const Shape& shape) {
  switch (t.kind) {
    case Transposed::as_is:
    case Transposed::untransposed: return xs[next++];
    case Transposed::rebroadcast: return lax::broadcast_in_dim(xs[next++], shape, t.dims);
    case Transposed::product: {
      next += 2;
      return swapped_product(xs[next - 2], xs[next - 1], *t.eqn->params);
    }
    case Transposed::elementwise: break;
  }
  std::vector<Tensor> operands;
  for (const Transposed& o : t.operands) operands.push_back(build_transposed(o, xs, next, shape));
  return fluxion::bind1(*t.eqn->primitive, operands, *t.eqn->params);
}

// transpose(E(...), q) of an elementwise expression E (used only there) whose leaves Transposed
// can rebuild in transposed layout, with at least one leaf that removes a transpose: E rebuilt on
// those leaves (the transposes around E disappear; jacfwd's basis and sums of weight gradients
// leave these). Depth-limited: expressions deeper than 4 stay as they are.
Result transpose_through_elementwise(Sweep& s, const Equation& e, const Axes& q, const AbstractValue& out) {
  const Equation* inner = s.producer(e.inputs[0]);
  if (!inner || !inner->primitive->traits.elementwise) return std::nullopt;
  Axes inverse(q.size());
  for (size_t k = 0; k < q.size(); ++k) inverse[static_cast<size_t>(q[k])] = static_cast<int64_t>(k);
  std::vector<Atom> args;
  std::optional<Transposed> plan = plan_transposed(s, e.inputs[0], q, inverse, args, 4);
  if (!plan || !plan->removes_transpose) return std::nullopt;
  return s.emit(out, args, [&](const std::vector<Tensor>& xs) {
    size_t next = 0;
    return build_transposed(*plan, xs, next, out.shape);
  });
}

// transpose(dot_general(a, b), q) where q swaps the lhs-free and rhs-free dims (keeping batch
// dims first) is dot_general(b, a): the product writes the transposed layout directly instead of
// a strided copy after it (per-example outer products of vmap(grad) end this way).
Result transpose_of_product(Sweep& s, const Equation& e, const Axes& perm, const AbstractValue& out) {
  const Equation* dot = s.produced_by(e.inputs[0], dot_general_family::dot_general_p());
  if (!dot || s.uses(e.inputs[0]) != 1 || perm != swapped_product_permutation(s, *dot)) return std::nullopt;
  const std::shared_ptr<const Params> params = dot->params;
  return s.emit(out, {dot->inputs[0], dot->inputs[1]},
                [&](const std::vector<Tensor>& xs) { return swapped_product(xs[0], xs[1], *params); });
}

// transpose(transpose(x, p1), p2) = transpose(x, c) with c[k] = p1[p2[k]]; identity c -> x.
Result transpose_chain(Sweep& s, const Equation& e, const AbstractValue& out) {
  const Axes perm = e.params->as<shape_family::TransposeParams>().permutation;
  if (is_identity_permutation(perm)) return e.inputs[0];
  if (Result r = transpose_of_product(s, e, perm, out)) return r;
  const Equation* inner = s.produced_by(e.inputs[0], shape_family::transpose_p());
  if (!inner) return transpose_through_elementwise(s, e, perm, out);
  const Axes first = inner->params->as<shape_family::TransposeParams>().permutation;
  Axes composed;
  for (int64_t k : perm) composed.push_back(first[static_cast<size_t>(k)]);
  if (is_identity_permutation(composed)) return inner->inputs[0];
  return s.emit(out, {inner->inputs[0]},
                [&](const std::vector<Tensor>& xs) { return lax::transpose(xs[0], composed); });
}

// Chains of reshape/squeeze/expand_dims are one reshape (all reinterpret row-major order).
Result reshape_chain(Sweep& s, const Equation& e, const AbstractValue& out) {
  if (!is_reshape_like(e.primitive)) return std::nullopt;
  const Equation* inner = s.producer(e.inputs[0]);
  if (!inner || !is_reshape_like(inner->primitive)) return std::nullopt;
  const Atom x = inner->inputs[0];
  if (s.aval(x) == out) return x;
  return s.emit(out, {x}, [&](const std::vector<Tensor>& xs) { return lax::reshape(xs[0], out.shape); });
}

// broadcast_in_dim(broadcast_in_dim(x, s1, d1), s2, d2) = broadcast_in_dim(x, s2, d2[d1[i]]);
// likewise through a reshape that only inserts size-1 dims into an x without any.
Result broadcast_chain(Sweep& s, const Equation& e, const AbstractValue& out) {
  const Axes outer_dims = e.params->as<shape_family::BroadcastInDimParams>().broadcast_dimensions;
  if (const Equation* r = s.producer(e.inputs[0]); r && is_reshape_like(r->primitive)) {
    const Shape &x = s.aval(r->inputs[0]).shape, &mid = s.aval(e.inputs[0]).shape;
    Axes dims;  // x's dims are mid's non-1 dims, in order
    for (int64_t i = 0; i < mid.size(); ++i)
      if (mid[i] != 1) dims.push_back(outer_dims[static_cast<size_t>(i)]);
    bool inserts_only = static_cast<int64_t>(dims.size()) == x.size();
    for (int64_t i = 0, k = 0; inserts_only && i < mid.size(); ++i)
      if (mid[i] != 1) inserts_only = x[k++] == mid[i];
    if (!inserts_only) return std::nullopt;
    return s.emit(out, {r->inputs[0]},
                  [&](const std::vector<Tensor>& xs) { return lax::broadcast_in_dim(xs[0], out.shape, dims); });
  }
  const Equation* inner = s.produced_by(e.inputs[0], shape_family::broadcast_in_dim_p());
  if (!inner) return std::nullopt;
  Axes dims;
  for (int64_t d : inner->params->as<shape_family::BroadcastInDimParams>().broadcast_dimensions)
    dims.push_back(outer_dims[static_cast<size_t>(d)]);
  return s.emit(out, {inner->inputs[0]},
                [&](const std::vector<Tensor>& xs) { return lax::broadcast_in_dim(xs[0], out.shape, dims); });
}

// broadcast_in_dim that only inserts size-1 dims (as many elements, dims in order) is a reshape:
// a view, where the broadcast was a copy made per block (measured: bench/RESULTS.md). A
// broadcast reading it still composes with it (broadcast_chain).
Result broadcast_as_reshape(Sweep& s, const Equation& e, const AbstractValue& out) {
  const Axes dims = e.params->as<shape_family::BroadcastInDimParams>().broadcast_dimensions;
  if (s.aval(e.inputs[0]).shape.num_elements() != out.shape.num_elements() || !std::is_sorted(dims.begin(), dims.end()))
    return std::nullopt;
  return s.emit(out, {e.inputs[0]}, [&](const std::vector<Tensor>& xs) { return lax::reshape(xs[0], out.shape); });
}

/// True when (x * inner) * outer equals x * (inner outer) for every x of `dtype`: inner = ±2^k
/// with k >= 0 (x inner is exact unless it overflows) and |outer| >= 1 (then x inner outer
/// overflows too), inner outer finite. (x*2)*0.5 is inf for x = 1e308, x*1 is not; (x*0.5)*2
/// loses the last bit of a subnormal x; (x*3)*2 doubles a rounded subnormal x*3.
bool exact_refactoring(double inner, double outer, DType dtype) {
  const double max = dtype == f32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  return simplify_detail::is_power_of_two(inner) && std::fabs(inner) >= 1 && std::isfinite(outer) &&
         std::fabs(outer) >= 1 && std::fabs(inner * outer) <= max;
}

// a + a -> a * 2 (the same rounding, overflow and signed zero), and (x * c1) * c2 -> x * (c1 c2)
// for rank-0 float constants where exact_refactoring says so (the inner product read only here).
// Reverse mode leaves both: the gradient of a square adds ct x twice, and the Hessian of an L2
// penalty scales its identity by the weight and then doubles it.
Result scalar_factors(Sweep& s, const Equation& e, const AbstractValue& out) {
  if (e.inputs.size() != 2 || (out.dtype != f32 && out.dtype != f64)) return std::nullopt;
  const Atom &a = e.inputs[0], &b = e.inputs[1];
  if (e.primitive == &binary_family::add_p() && !a.is_literal() && !b.is_literal() && a.var == b.var &&
      s.aval(a) == out)
    return s.emit(out, {a}, [](const std::vector<Tensor>& xs) { return xs[0] * 2.0; });
  if (e.primitive != &binary_family::mul_p()) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    const Atom &inner_atom = e.inputs[i], &c2 = e.inputs[1 - i];
    const std::optional<double> v2 = s.splat(c2);
    const Equation* inner = s.produced_by(inner_atom, binary_family::mul_p());
    if (!v2 || s.aval(c2).ndim() != 0 || !inner || s.uses(inner_atom) != 1) continue;
    for (size_t k = 0; k < 2; ++k) {
      const Atom &x = inner->inputs[k], &c1 = inner->inputs[1 - k];
      const std::optional<double> v1 = s.splat(c1);
      if (!v1 || s.aval(c1).ndim() != 0 || s.aval(x) != out || !exact_refactoring(*v1, *v2, out.dtype)) continue;
      const double factor = *v1 * *v2;
      return s.emit(out, {x}, [factor](const std::vector<Tensor>& xs) { return xs[0] * factor; });
    }
  }
  return std::nullopt;
}

// select with a known predicate picks a branch; equal branches need no predicate.
Result select_known(Sweep& s, const Equation& e, const AbstractValue&) {
  const std::optional<double> pred = s.splat(e.inputs[0]);
  if (pred) return *pred != 0 ? e.inputs[1] : e.inputs[2];
  const Atom &a = e.inputs[1], &b = e.inputs[2];
  if (!a.is_literal() && !b.is_literal() && a.var == b.var) return a;
  return std::nullopt;
}

// sum(x * c) -> sum(x) * c for a rank-0 c that multiplies exactly past a sum (exact_factor: an
// integer, or a float constant +2^k), when the scaled value is read only by the sum: the
// scaling then touches the (smaller) reduced value instead of a full-size pass of its own. Only
// the sum's order changes (and where the sum overflows or underflows). Not for a negation: a sum
// cancelling to +0 would become -0 (the negation stays fused with the sum instead).
Result scaling_past_sum(Sweep& s, const Equation& e, const AbstractValue& out) {
  const Equation* inner = s.producer(e.inputs[0]);
  if (!inner || inner->outputs.size() != 1 || s.uses(e.inputs[0]) != 1) return std::nullopt;
  const std::vector<int64_t> axes = e.params->as<reduction_family::ReduceParams>().axes;
  if (inner->primitive != &binary_family::mul_p() || inner->inputs.size() != 2) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    const Atom &x = inner->inputs[i], &c = inner->inputs[1 - i];
    if (s.aval(c).ndim() != 0 || s.aval(x) != s.aval(e.inputs[0]) || !simplify_detail::exact_factor(s, c)) continue;
    return s.emit(out, {x, c},
                  [&](const std::vector<Tensor>& xs) { return lax::mul(lax::reduce_sum(xs[0], axes), xs[1]); });
  }
  return std::nullopt;
}

// Negations absorbed by the operation reading them: add(a, neg b) -> sub(a, b), add(neg a, b) ->
// sub(b, a), sub(a, neg b) -> add(a, b); and mul(x, neg y) -> neg(mul(x, y)) when the neg is read
// only there, so that an add or sub after the product absorbs it (reverse mode leaves these: the
// gradient of exp(-x^2) adds x * neg(exp(..)) twice). Exact in IEEE and in wrapping integers.
Result absorbed_negation(Sweep& s, const Equation& e, const AbstractValue& out) {
  const Primitive* p = e.primitive;
  if (e.inputs.size() != 2) return std::nullopt;
  auto negated = [&](size_t i) { return s.produced_by(e.inputs[i], unary_family::neg_p()); };
  if (p == &binary_family::add_p() || p == &binary_family::sub_p()) {
    for (size_t i : {size_t{1}, size_t{0}}) {
      const Equation* n = negated(i);
      if (!n || (p == &binary_family::sub_p() && i == 0)) continue;
      const Atom& other = e.inputs[1 - i];
      const bool subtract = p == &binary_family::add_p();  // add(a, neg b) = a - b; sub(a, neg b) = a + b
      return s.emit(out, {i == 1 ? other : n->inputs[0], i == 1 ? n->inputs[0] : other},
                    [&](const std::vector<Tensor>& xs) {
                      if (!subtract) return lax::add(xs[0], xs[1]);
                      return i == 1 ? lax::sub(xs[0], xs[1]) : lax::sub(xs[1], xs[0]);
                    });
    }
    return std::nullopt;
  }
  if (p != &binary_family::mul_p()) return std::nullopt;
  for (size_t i = 0; i < 2; ++i) {
    const Equation* n = negated(i);
    if (!n || s.uses(e.inputs[i]) != 1) continue;
    return s.emit(out, {e.inputs[1 - i], n->inputs[0]},
                  [](const std::vector<Tensor>& xs) { return lax::neg(lax::mul(xs[0], xs[1])); });
  }
  return std::nullopt;
}

}  // namespace simplify_algebra
}  // namespace fluxion::passes
