// The product rules of simplify: dot_general of an operand that is a broadcast_in_dim does the
// product on the unbroadcast value. An operand constant along one of its dims d (a new dim, or a
// size-1 dim expanded) lets the product skip d:
//   d free:       the output is constant along d's output dim: broadcast the smaller product;
//   d contracted: the other operand is summed over its paired dim first (x Σb for Σ x b: only
//                 for an exact factor x, see exact_factor);
//   d batch:      the other operand's paired dim becomes a free dim (one larger GEMM instead of
//                 one per batch); when a transpose must then restore the batch-first output
//                 order, only where the result reaches a reduction through elementwise ops.
// Each rewrite does at most the original's multiply-adds, and computes the original's terms
// (only their accumulation order changes, as it does between product kernels). For integers, a
// sum or difference of two such operands, used only by the product, is distributed over it (two
// shrunk products) when that costs no more multiply-adds than the original product plus the
// elements of the sum; and a sum over a product's free dims is taken on its operands first.
// Two transpose rules finish the batch case: E(transpose(a), ...) -> transpose(E(a, ...)) for an
// elementwise E and reduce(transpose(a)) -> transpose(reduce(a)) move a transpose onto the
// reduced, smaller value (measured: bench/RESULTS.md).
// A transpose feeding a product that keeps the free dims' order is absorbed into its pairs.
#include <algorithm>

#include "fluxion/lax.hpp"
#include "passes/simplify.hpp"

namespace fluxion::passes {
namespace simplify_products {

using Axes = std::vector<int64_t>;
using simplify_detail::Spread;
using simplify_detail::spread_of;

/// One operand of a dot_general: its dims' roles, by the pairs read from the params.
struct Operand {
  Atom atom;
  Shape shape;
  Axes contract, batch;  // this side's dims of the contracting and batch pairs, pair order
};

/// The two operands of `e` (a dot_general), or nullopt when its params name dims out of range
/// or unpaired (never for a typechecked Jaxpr; checked so that bad input cannot index wildly).
std::optional<std::pair<Operand, Operand>> operands_of(const Sweep& s, const Equation& e) {
  if (e.inputs.size() != 2) return std::nullopt;
  const AxisPair contract = e.params->as<dot_general_family::DotGeneralParams>().contract;
  const AxisPair batch = e.params->as<dot_general_family::DotGeneralParams>().batch;
  Operand l{e.inputs[0], s.aval(e.inputs[0]).shape, contract.first, batch.first};
  Operand r{e.inputs[1], s.aval(e.inputs[1]).shape, contract.second, batch.second};
  if (l.contract.size() != r.contract.size() || l.batch.size() != r.batch.size()) return std::nullopt;
  for (const Operand* o : {&l, &r}) {
    std::vector<bool> used(static_cast<size_t>(o->shape.size()), false);
    for (const Axes* dims : {&o->contract, &o->batch})
      for (int64_t d : *dims) {
        if (d < 0 || d >= o->shape.size() || used[static_cast<size_t>(d)]) return std::nullopt;
        used[static_cast<size_t>(d)] = true;
      }
  }
  return std::make_pair(std::move(l), std::move(r));
}

/// Index of `d` in `dims`, or -1.
int64_t index_in(const Axes& dims, int64_t d) {
  auto it = std::find(dims.begin(), dims.end(), d);
  return it == dims.end() ? -1 : static_cast<int64_t>(it - dims.begin());
}

/// Where each dim of the lhs and rhs lands in the product's output (batch, lhs free, rhs free):
/// batch pair j at j, a contracted dim nowhere (-1).
std::pair<Axes, Axes> output_positions(const Operand& l, const Operand& r) {
  const int64_t nb = static_cast<int64_t>(l.batch.size());
  int64_t next = nb;
  std::pair<Axes, Axes> pos;
  for (const Operand* o : {&l, &r}) {
    Axes& p = o == &l ? pos.first : pos.second;
    for (int64_t d = 0; d < o->shape.size(); ++d) {
      const int64_t j = index_in(o->batch, d);
      p.push_back(j >= 0 ? j : index_in(o->contract, d) >= 0 ? -1 : next++);
    }
  }
  return pos;
}

/// The factor by which skipping the spread dims of `o` cuts the product's multiply-adds: the
/// sizes of its constant free and contracted dims (a batch dim only regroups the GEMMs).
double flop_factor(const Spread& sp, const Operand& o) {
  double f = 1;
  for (int64_t d = 0; d < o.shape.size(); ++d)
    if (sp.source[static_cast<size_t>(d)] < 0 && index_in(o.batch, d) < 0) f *= static_cast<double>(o.shape[d]);
  return f;
}

/// True when the spread makes the product smaller: some constant dim has more than one element.
bool shrinks(const Spread& sp, const Operand& o) {
  for (int64_t d = 0; d < o.shape.size(); ++d)
    if (sp.source[static_cast<size_t>(d)] < 0 && o.shape[d] > 1) return true;
  return false;
}

/// The product on the shrunk operands: its pairs, the other operand's dims summed first, and
/// where its output dims go in the original output.
struct Shrunk {
  AxisPair contract, batch;  // lhs/rhs of the new product, as in the original
  Axes summed;               // dims of the other operand summed before the product
  Axes positions;            // per new output dim: its original output dim
};

// `a` (the spread operand) and `b`: a's constant dims are dropped; b's dims paired with a's
// constant contracted dims are summed; those paired with a's constant batch dims become free.
Shrunk shrink(const Spread& sp, const Operand& a, const Operand& b, bool a_is_lhs) {
  const auto [pos_l, pos_r] = a_is_lhs ? output_positions(a, b) : output_positions(b, a);
  const Axes& pos_a = a_is_lhs ? pos_l : pos_r;
  const Axes& pos_b = a_is_lhs ? pos_r : pos_l;
  auto kept = [&](int64_t d) { return sp.source[static_cast<size_t>(d)] >= 0; };
  // New dim numbers: a keeps its non-constant dims, b loses its summed dims.
  Axes new_a(static_cast<size_t>(a.shape.size()), -1), new_b(static_cast<size_t>(b.shape.size()), -1);
  for (int64_t d = 0, n = 0; d < a.shape.size(); ++d)
    if (kept(d)) new_a[static_cast<size_t>(d)] = n++;
  Shrunk out;
  for (size_t j = 0; j < a.contract.size(); ++j)
    if (!kept(a.contract[j])) out.summed.push_back(b.contract[j]);
  std::sort(out.summed.begin(), out.summed.end());
  for (int64_t d = 0, n = 0; d < b.shape.size(); ++d)
    if (!std::binary_search(out.summed.begin(), out.summed.end(), d)) new_b[static_cast<size_t>(d)] = n++;
  Axes ca, cb, ba, bb;
  for (size_t j = 0; j < a.contract.size(); ++j)
    if (kept(a.contract[j])) {
      ca.push_back(new_a[static_cast<size_t>(a.contract[j])]);
      cb.push_back(new_b[static_cast<size_t>(b.contract[j])]);
    }
  Axes b_batch;  // b's dims still batched
  for (size_t j = 0; j < a.batch.size(); ++j)
    if (kept(a.batch[j])) {
      ba.push_back(new_a[static_cast<size_t>(a.batch[j])]);
      bb.push_back(new_b[static_cast<size_t>(b.batch[j])]);
      b_batch.push_back(b.batch[j]);
      out.positions.push_back(static_cast<int64_t>(j));
    }
  // Free dims of the new product, lhs then rhs, each in dim order.
  auto append_free = [&](bool side_a) {
    const Operand& o = side_a ? a : b;
    for (int64_t d = 0; d < o.shape.size(); ++d) {
      if (side_a ? !kept(d) || index_in(a.batch, d) >= 0 || index_in(a.contract, d) >= 0
                 : new_b[static_cast<size_t>(d)] < 0 || index_in(b_batch, d) >= 0 || index_in(b.contract, d) >= 0)
        continue;
      out.positions.push_back((side_a ? pos_a : pos_b)[static_cast<size_t>(d)]);
    }
  };
  append_free(a_is_lhs);
  append_free(!a_is_lhs);
  out.contract = a_is_lhs ? AxisPair{ca, cb} : AxisPair{cb, ca};
  out.batch = a_is_lhs ? AxisPair{ba, bb} : AxisPair{bb, ba};
  return out;
}

/// True when every read of variable `a` (in the Jaxpr as the sweep began) is by `e`.
bool only_read_by(const Sweep& s, const Atom& a, const Equation& e) {
  auto is_a = [&](const Atom& x) { return !x.is_literal() && x.var == a.var; };
  return !a.is_literal() && s.uses(a) == std::count_if(e.inputs.begin(), e.inputs.end(), is_a);
}

bool is_reduction(const Primitive* p) {
  return p == &reduction_family::reduce_sum_p() || p == &reduction_family::reduce_max_p() ||
         p == &reduction_family::reduce_min_p() || p == &reduction_family::reduce_prod_p();
}

/// True when the only reader of `v` is a reduction, or an elementwise equation whose result
/// passes this test: a transpose of `v` then moves into the reduction (sink_through_elementwise,
/// sink_into_reduction), onto fewer elements. Other operands of the chain are not checked: a
/// transpose they stop stays where it is.
bool ends_in_reduction(const Sweep& s, Atom v) {
  for (int depth = 0; depth < 16 && !v.is_literal(); ++depth) {
    const std::vector<const Equation*> readers = s.later_readers(v);
    if (readers.size() != 1 || readers[0]->outputs.size() != 1) return false;
    const Equation& r = *readers[0];
    if (!only_read_by(s, v, r)) return false;  // also read elsewhere (or an output)
    if (is_reduction(r.primitive)) return true;
    if (!r.primitive->traits.elementwise) return false;
    v = Atom::of_var(r.outputs[0]);
  }
  return false;
}

/// The shrunk product's output needs a transpose (some batch dim became a free dim).
bool needs_transpose(const Shrunk& p) { return !std::is_sorted(p.positions.begin(), p.positions.end()); }

// dot_general(broadcast_in_dim(x), b) (or with the broadcast on the rhs) -> the product of x
// (its expanded size-1 dims reshaped away) and b (summed where needed), transposed into the
// original output order and broadcast along the dropped free dims. A transpose of the whole
// output costs about what the batched GEMMs on the broadcast cost more than one GEMM (measured:
// bench/RESULTS.md), so the rewrite needs one only where it then moves into a reduction.
std::optional<Atom> shrink_spread_operand(Sweep& s, const Equation& e, const Operand& l, const Operand& r,
                                          bool a_is_lhs, const AbstractValue& out) {
  const Operand& a = a_is_lhs ? l : r;
  const Operand& b = a_is_lhs ? r : l;
  std::optional<Spread> sp = spread_of(s, a.atom);
  if (!sp || !shrinks(*sp, a)) return std::nullopt;
  for (int64_t d : a.contract)  // a constant contracted dim takes x out of a sum over b's dim
    if (sp->source[static_cast<size_t>(d)] < 0 && a.shape[d] > 1 && !simplify_detail::exact_factor(s, sp->x))
      return std::nullopt;
  const Shrunk p = shrink(*sp, a, b, a_is_lhs);
  const bool transpose = needs_transpose(p);
  if (transpose && !ends_in_reduction(s, Atom::of_var(e.outputs[0]))) return std::nullopt;
  Axes perm(p.positions.size()), dims = p.positions;
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::sort(perm.begin(), perm.end(), [&](int64_t i, int64_t j) { return p.positions[i] < p.positions[j]; });
  std::sort(dims.begin(), dims.end());
  return s.emit(out, {sp->x, b.atom}, [&](const std::vector<Tensor>& xs) {
    const Tensor x = xs[0].shape() == sp->kept ? xs[0] : lax::reshape(xs[0], sp->kept);
    const Tensor y = p.summed.empty() ? xs[1] : lax::reduce_sum(xs[1], p.summed);
    const Tensor& lhs = a_is_lhs ? x : y;
    const Tensor& rhs = a_is_lhs ? y : x;
    // A rank-0 operand has no pairs left: the product is a scaling.
    Tensor z =
        lhs.ndim() == 0 || rhs.ndim() == 0 ? lax::mul(lhs, rhs) : lax::dot_general(lhs, rhs, p.contract, p.batch);
    if (transpose) z = lax::transpose(z, perm);
    return z.shape() == out.shape ? z : lax::broadcast_in_dim(z, out.shape, dims);
  });
}

// dot_general(a +- b, c) -> dot_general(a, c) +- dot_general(b, c) (or on the rhs) when a and b
// are both broadcasts that shrink the product, and the two shrunk products cost no more
// multiply-adds than the original plus the elements of a +- b. Integers only: in floating point
// the two products cancel where a and b are close, and their rounding errors, relative to a and b
// instead of a - b, remain (issue 28: pairwise differences of values near 1e12 times W lost 3
// digits).
std::optional<Atom> distribute(Sweep& s, const Equation& e, const Operand& l, const Operand& r, bool on_lhs,
                               const AbstractValue& out) {
  if (is_floating(out.dtype)) return std::nullopt;
  const Operand& o = on_lhs ? l : r;
  const Equation* sum = s.producer(o.atom);
  const bool sum_or_difference =
      sum && (sum->primitive == &binary_family::add_p() || sum->primitive == &binary_family::sub_p());
  if (!sum_or_difference || sum->inputs.size() != 2) return std::nullopt;
  if (s.uses(o.atom) != 1) return std::nullopt;  // a +- b is computed anyway: nothing saved
  double contracted = 1;
  for (int64_t d : o.contract) contracted *= static_cast<double>(o.shape[d]);
  const double flops = static_cast<double>(out.shape.num_elements()) * contracted;
  const Operand& other = on_lhs ? r : l;
  double after = 0;
  for (const Atom& term : sum->inputs) {
    std::optional<Spread> sp = spread_of(s, term);
    Operand t = o;
    t.atom = term;
    if (!sp || s.aval(term) != s.aval(o.atom) || !shrinks(*sp, t)) return std::nullopt;
    // The same condition as shrink_spread_operand's, which rewrites the term's product next.
    if (needs_transpose(shrink(*sp, t, other, on_lhs)) && !ends_in_reduction(s, Atom::of_var(e.outputs[0])))
      return std::nullopt;
    after += flops / flop_factor(*sp, t);
  }
  if (after > flops + static_cast<double>(o.shape.num_elements())) return std::nullopt;
  const Primitive& op = *sum->primitive;
  const Primitive& dot = *e.primitive;
  const std::shared_ptr<const Params> dot_params = e.params, op_params = sum->params;
  return s.emit(out, {sum->inputs[0], sum->inputs[1], other.atom}, [&](const std::vector<Tensor>& xs) {
    auto product = [&](const Tensor& t) {
      return on_lhs ? fluxion::bind1(dot, {t, xs[2]}, *dot_params) : fluxion::bind1(dot, {xs[2], t}, *dot_params);
    };
    return fluxion::bind1(op, {product(xs[0]), product(xs[1])}, *op_params);
  });
}

// E(transpose(a, p), ...) of an elementwise E -> transpose(E(a, ...), p), when every other
// operand is rank 0, the same transpose, or a broadcast whose dims stay increasing in a's layout,
// and the transposes are used only here. Moves the transpose towards a reduction that shrinks it
// (see sink_into_reduction), e.g. the one a product over a broadcast batch dim leaves.
std::optional<Atom> sink_through_elementwise(Sweep& s, const Equation& e, const AbstractValue& out) {
  if (!e.primitive->traits.elementwise) return std::nullopt;
  std::optional<Axes> perm;
  for (const Atom& a : e.inputs)
    if (const Equation* t = s.produced_by(a, shape_family::transpose_p())) {
      const Axes p = t->params->as<shape_family::TransposeParams>().permutation;
      if (perm && *perm != p) return std::nullopt;
      perm = p;
      if (!only_read_by(s, a, e)) return std::nullopt;
    }
  if (!perm || static_cast<int64_t>(perm->size()) != out.ndim()) return std::nullopt;
  for (const Atom& a : e.inputs)  // never transpose more bytes than before (convert f32 -> f64)
    if (s.produced_by(a, shape_family::transpose_p()) && dtype_size(out.dtype) > dtype_size(s.aval(a).dtype))
      return std::nullopt;
  Shape shape(Axes(perm->size()));
  for (size_t k = 0; k < perm->size(); ++k) shape[(*perm)[k]] = out.shape[static_cast<int64_t>(k)];
  std::vector<Atom> args;
  std::vector<std::optional<Axes>> rebroadcast;
  for (const Atom& a : e.inputs) {
    if (s.aval(a).ndim() == 0) {
      args.push_back(a);
      rebroadcast.emplace_back();
    } else if (const Equation* t = s.produced_by(a, shape_family::transpose_p())) {
      args.push_back(t->inputs[0]);
      rebroadcast.emplace_back();
    } else if (const Equation* b = s.produced_by(a, shape_family::broadcast_in_dim_p())) {
      Axes dims;
      for (int64_t d : b->params->as<shape_family::BroadcastInDimParams>().broadcast_dimensions)
        dims.push_back((*perm)[static_cast<size_t>(d)]);
      if (!std::is_sorted(dims.begin(), dims.end())) return std::nullopt;
      args.push_back(b->inputs[0]);
      rebroadcast.emplace_back(std::move(dims));
    } else {
      return std::nullopt;
    }
  }
  const Primitive& op = *e.primitive;
  const std::shared_ptr<const Params> params = e.params;
  return s.emit(out, args, [&](const std::vector<Tensor>& xs) {
    std::vector<Tensor> operands;
    for (size_t i = 0; i < xs.size(); ++i)
      operands.push_back(rebroadcast[i] ? lax::broadcast_in_dim(xs[i], shape, *rebroadcast[i]) : xs[i]);
    return lax::transpose(fluxion::bind1(op, operands, *params), *perm);
  });
}

/// True when an operand with these dims (batch and contracting in pair order, free ascending)
/// is read in place by the CPU product: its layout is [batch, free, contracting] or [batch,
/// contracting, free] (a row-major matrix per batch, possibly transposed).
bool read_in_place(const Axes& batch, const Axes& free, const Axes& contract) {
  auto is_iota = [](const std::vector<const Axes*>& parts) {
    int64_t next = 0;
    for (const Axes* p : parts)
      for (int64_t d : *p)
        if (d != next++) return false;
    return true;
  };
  return is_iota({&batch, &free, &contract}) || is_iota({&batch, &contract, &free});
}

// dot_general(transpose(x, p), b) -> dot_general(x, b) with the pairs naming x's dims, when p
// keeps the free dims in order (they give the output's dim order): the product reads x with
// strides or transposed instead of a copy made first. Only where x is then read in place, or
// the transpose has no other reader (a copy inside the product then replaces the transpose's).
// Measured: bench/RESULTS.md.
std::optional<Atom> absorb_transpose(Sweep& s, const Operand& l, const Operand& r, bool on_lhs,
                                     const AbstractValue& out) {
  const Operand& a = on_lhs ? l : r;
  const Equation* t = s.produced_by(a.atom, shape_family::transpose_p());
  if (!t || t->inputs[0].is_literal()) return std::nullopt;
  const Axes perm = t->params->as<shape_family::TransposeParams>().permutation;
  if (static_cast<int64_t>(perm.size()) != a.shape.size()) return std::nullopt;
  auto mapped = [&](const Axes& dims) {
    Axes m;
    for (int64_t d : dims) m.push_back(perm[static_cast<size_t>(d)]);
    return m;
  };
  const Axes contract = mapped(a.contract), batch = mapped(a.batch);
  Axes free;
  for (int64_t d = 0; d < a.shape.size(); ++d)
    if (index_in(a.contract, d) < 0 && index_in(a.batch, d) < 0) free.push_back(perm[static_cast<size_t>(d)]);
  if (!std::is_sorted(free.begin(), free.end())) return std::nullopt;
  if (s.uses(a.atom) != 1 && !read_in_place(batch, free, contract)) return std::nullopt;
  const AxisPair c = on_lhs ? AxisPair{contract, r.contract} : AxisPair{l.contract, contract};
  const AxisPair b = on_lhs ? AxisPair{batch, r.batch} : AxisPair{l.batch, batch};
  const std::vector<Atom> args =
      on_lhs ? std::vector<Atom>{t->inputs[0], r.atom} : std::vector<Atom>{l.atom, t->inputs[0]};
  return s.emit(out, args, [&](const std::vector<Tensor>& xs) { return lax::dot_general(xs[0], xs[1], c, b); });
}

// reduce(transpose(a, p), axes) -> transpose(reduce(a, p[axes]), q): the transpose moves to the
// smaller reduced value (and disappears when the kept dims stay in order).
std::optional<Atom> sink_into_reduction(Sweep& s, const Equation& e, const AbstractValue& out) {
  if (!is_reduction(e.primitive)) return std::nullopt;
  const Equation* t = s.produced_by(e.inputs[0], shape_family::transpose_p());
  if (!t || s.uses(e.inputs[0]) != 1) return std::nullopt;
  const Axes perm = t->params->as<shape_family::TransposeParams>().permutation;
  const Axes axes = e.params->as<reduction_family::ReduceParams>().axes;
  Axes moved, kept;  // dims of a: reduced, and kept in the output's order
  for (int64_t k = 0; k < static_cast<int64_t>(perm.size()); ++k)
    (std::binary_search(axes.begin(), axes.end(), k) ? moved : kept).push_back(perm[static_cast<size_t>(k)]);
  std::sort(moved.begin(), moved.end());
  Axes rest = kept;  // a's kept dims in a's order
  std::sort(rest.begin(), rest.end());
  Axes q;
  for (int64_t d : kept) q.push_back(std::lower_bound(rest.begin(), rest.end(), d) - rest.begin());
  const Primitive* p = e.primitive;
  return s.emit(out, {t->inputs[0]}, [&](const std::vector<Tensor>& xs) {
    Tensor r = p == &reduction_family::reduce_sum_p()   ? lax::reduce_sum(xs[0], moved)
               : p == &reduction_family::reduce_max_p() ? lax::reduce_max(xs[0], moved)
               : p == &reduction_family::reduce_min_p() ? lax::reduce_min(xs[0], moved)
                                                        : lax::reduce_prod(xs[0], moved);
    return std::is_sorted(q.begin(), q.end()) ? r : lax::transpose(r, q);
  });
}

// reduce_sum(dot_general(a, b), axes) where some summed output dims are free dims of a or b (and
// the product has no other reader) -> the product of a and b each summed over those dims first,
// then the sum over the remaining (batch) axes: the product shrinks by the summed dims' sizes.
// Integers only: in floating point (Σ_i a_ik) b_kj rounds unlike Σ_i a_ik b_kj, and is inf where
// eager is NaN for an infinite b_kj and a zero a_ik among non-zero ones.
std::optional<Atom> sum_into_product(Sweep& s, const Equation& e, const AbstractValue& out) {
  if (is_floating(out.dtype)) return std::nullopt;
  const Equation* p = s.produced_by(e.inputs[0], dot_general_family::dot_general_p());
  if (!p || s.uses(e.inputs[0]) != 1) return std::nullopt;
  const auto ops = operands_of(s, *p);
  if (!ops) return std::nullopt;
  const auto& [l, r] = *ops;
  // Output dim -> (side, operand dim): batch dims first, then each side's free dims in order.
  const auto [lpos, rpos] = output_positions(l, r);
  const int64_t nb = static_cast<int64_t>(l.batch.size());
  Axes summed_l, summed_r, rest;
  for (int64_t axis : e.params->as<reduction_family::ReduceParams>().axes) {
    const int64_t dl = index_in(lpos, axis), dr = index_in(rpos, axis);
    if (axis >= nb && dl >= 0) summed_l.push_back(dl);
    else if (axis >= nb && dr >= 0) summed_r.push_back(dr);
    else rest.push_back(axis);  // a batch dim: both operands depend on it
  }
  if (summed_l.empty() && summed_r.empty()) return std::nullopt;
  // An operand's pairs after its summed dims are dropped: dims above a dropped one shift down.
  auto renumber = [](const Axes& dims, const Axes& dropped) {
    Axes out;
    for (int64_t d : dims)
      out.push_back(d - std::count_if(dropped.begin(), dropped.end(), [&](int64_t x) { return x < d; }));
    return out;
  };
  const AxisPair contract{renumber(l.contract, summed_l), renumber(r.contract, summed_r)};
  const AxisPair batch{renumber(l.batch, summed_l), renumber(r.batch, summed_r)};
  std::sort(summed_l.begin(), summed_l.end());
  std::sort(summed_r.begin(), summed_r.end());
  return s.emit(out, {l.atom, r.atom}, [&](const std::vector<Tensor>& xs) {
    Tensor a = summed_l.empty() ? xs[0] : lax::reduce_sum(xs[0], summed_l);
    Tensor b = summed_r.empty() ? xs[1] : lax::reduce_sum(xs[1], summed_r);
    Tensor product = lax::dot_general(a, b, contract, batch);
    return rest.empty() ? product : lax::reduce_sum(product, rest);  // batch dims keep their positions
  });
}

/// `rewrite(lhs, rhs, on_lhs)` of a dot_general's operands tried on the lhs, then on the rhs.
template <class Rewrite>
std::optional<Atom> on_either_operand(const Sweep& s, const Equation& e, const Rewrite& rewrite) {
  const auto ops = operands_of(s, e);
  if (!ops) return std::nullopt;
  for (bool on_lhs : {true, false})
    if (std::optional<Atom> res = rewrite(ops->first, ops->second, on_lhs)) return res;
  return std::nullopt;
}

std::optional<Atom> shrink_spread_operands(Sweep& s, const Equation& e, const AbstractValue& out) {
  return on_either_operand(s, e, [&](const Operand& l, const Operand& r, bool on_lhs) {
    return shrink_spread_operand(s, e, l, r, on_lhs, out);
  });
}

std::optional<Atom> distribute_over_sum(Sweep& s, const Equation& e, const AbstractValue& out) {
  return on_either_operand(
      s, e, [&](const Operand& l, const Operand& r, bool on_lhs) { return distribute(s, e, l, r, on_lhs, out); });
}

std::optional<Atom> absorb_transposes(Sweep& s, const Equation& e, const AbstractValue& out) {
  return on_either_operand(
      s, e, [&](const Operand& l, const Operand& r, bool on_lhs) { return absorb_transpose(s, l, r, on_lhs, out); });
}

}  // namespace simplify_products

namespace simplify_detail {

std::optional<Spread> spread_of(const Sweep& s, const Atom& a) {
  using Axes = std::vector<int64_t>;
  const Equation* b = s.produced_by(a, shape_family::broadcast_in_dim_p());
  if (!b) return std::nullopt;
  const Axes dims = b->params->as<shape_family::BroadcastInDimParams>().broadcast_dimensions;
  const Shape& xs = s.aval(b->inputs[0]).shape;
  const Shape& shape = s.aval(a).shape;
  if (static_cast<int64_t>(dims.size()) != xs.size() || !std::is_sorted(dims.begin(), dims.end()))
    return std::nullopt;  // the shape rule asks for increasing dims: x's dims keep their order
  Spread sp{b->inputs[0], Axes(static_cast<size_t>(shape.size()), -1), {}};
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= shape.size()) return std::nullopt;
    if (xs[static_cast<int64_t>(i)] != shape[dims[i]]) continue;  // size 1, expanded
    sp.source[static_cast<size_t>(dims[i])] = static_cast<int64_t>(i);
    sp.kept.push_back(xs[static_cast<int64_t>(i)]);
  }
  return sp;
}

}  // namespace simplify_detail
}  // namespace fluxion::passes
