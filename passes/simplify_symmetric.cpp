// The symmetric-product rules of simplify.
//
// gram: a dot_general whose two operands are the same rank-2 value x, each up to a scaling along
// the contracted dim, is xᵀ diag(s) x (symmetric): it becomes gram(x, s), whose kernel computes
// half the multiply-adds. An operand is recognised through elementwise scalings by values that
// vary only along the contracted index (broadcast vectors, rank-0 values), sums and differences
// of such terms over the same x, negation, transposes and reshapes/broadcasts that only add or
// drop size-1 dims. This is what the Hessian of a loss over X w looks like after jacfwd(jacrev)
// and the seed rules: Xᵀ diag(f''(X w)) X spread over a chain of products (measured:
// bench/RESULTS.md).
//
// symmetric transpose: a transpose that swaps two dims of a value symmetric in them (a gram
// result, an identity constant, elementwise combinations of symmetric values, broadcasts and
// reshapes of them) is the value itself.
#include <algorithm>
#include <memory>
#include <numeric>
#include <unordered_map>

#include "fluxion/lax.hpp"
#include "passes/simplify.hpp"

namespace fluxion::passes {
namespace simplify_symmetric {

using Axes = std::vector<int64_t>;
using simplify_detail::Sweep;

/// Products smaller than this many multiply-adds (N D²) stay ordinary dot_generals: the tiny
/// and small-GEMM paths beat splitting them.
constexpr double kMinGramWork = 1 << 16;
/// Recursion limit of the operand and symmetry walks (expression depth).
constexpr int kMaxDepth = 48;

/// For each dim of `to`, the dim of `from` holding the same elements (-1 for a size-1 dim of
/// `to`), when `to` only adds or drops size-1 dims of `from`; nullopt otherwise.
std::optional<Axes> unit_dim_map(const Shape& from, const Shape& to) {
  Axes map(static_cast<size_t>(to.size()), -1);
  int64_t f = 0;
  for (int64_t t = 0; t < to.size(); ++t) {
    if (to[t] == 1) continue;
    while (f < from.size() && from[f] == 1) ++f;
    if (f == from.size() || from[f] != to[t]) return std::nullopt;
    map[static_cast<size_t>(t)] = f++;
  }
  while (f < from.size() && from[f] == 1) ++f;
  if (f != from.size()) return std::nullopt;
  return map;
}

bool same_var(const Atom& a, const Atom& b) { return !a.is_literal() && !b.is_literal() && a.var == b.var; }

bool is_reshape_like(const Primitive* p) {
  return p == &shape_family::reshape_p() || p == &shape_family::squeeze_p() || p == &shape_family::expand_dims_p();
}

// ---------------------------------------------------------------- gram

/// The scale of a factored value: a tree of elementwise ops over N-vectors and scalars.
struct Scale {
  enum Kind { one, leaf, neg, mul, div, add, sub } kind = one;
  size_t index = 0;  // leaf: into the analysis's leaves
  std::shared_ptr<const Scale> a, b;
};
using ScalePtr = std::shared_ptr<const Scale>;

ScalePtr node(Scale::Kind k, ScalePtr a = nullptr, ScalePtr b = nullptr) {
  auto s = std::make_shared<Scale>();
  s->kind = k;
  s->a = std::move(a);
  s->b = std::move(b);
  return s;
}

/// A value v = base[map(i)] * scale[i along scale_dim]: `map[d]` is the base dim that v's dim d
/// reads (-1: a size-1 dim of v that reads none); the scale varies along base dim `scale_dim`
/// only (-1: it is one value).
struct Factored {
  Atom base;
  Axes map;
  int64_t scale_dim = -1;
  ScalePtr scale;
};

/// A leaf of a scale: `atom` holds its values; `vector` says they are N values (reshaped to
/// [N]), else one value (reshaped to rank 0).
struct Leaf {
  Atom atom;
  bool vector = false;
};

class GramAnalysis {
 public:
  explicit GramAnalysis(Sweep& s) : s_(s) {}

  /// The deepest factorisation of `v` (v itself as the base when nothing more is known).
  std::optional<Factored> factor(const Atom& v, int depth = 0) {
    if (v.is_literal()) return std::nullopt;
    auto it = memo_.find(v.var);
    if (it != memo_.end()) return it->second;
    std::optional<Factored> f = depth < kMaxDepth ? through_producer(v, depth) : std::nullopt;
    if (!f) {
      Axes id(static_cast<size_t>(s_.aval(v).ndim()));
      std::iota(id.begin(), id.end(), 0);
      f = Factored{v, std::move(id), -1, node(Scale::one)};
    }
    memo_.emplace(v.var, f);
    return f;
  }

  const std::vector<Leaf>& leaves() const { return leaves_; }

 private:
  /// `u` (an operand of an elementwise op with output shape `shape`) as a scale leaf varying
  /// along at most one dim of the output: {leaf, that dim or -1}.
  std::optional<std::pair<ScalePtr, int64_t>> leaf_of(const Atom& u, const Shape& shape) {
    auto make = [&](const Atom& a, bool vector) {
      leaves_.push_back(Leaf{a, vector});
      auto n = std::make_shared<Scale>();
      n->kind = Scale::leaf;
      n->index = leaves_.size() - 1;
      return ScalePtr(n);
    };
    const AbstractValue ua = s_.aval(u);
    if (ua.ndim() == 0) return std::make_pair(make(u, false), int64_t{-1});
    if (ua.shape != shape) return std::nullopt;
    if (std::optional<Atom> r = s_.rank0(u)) return std::make_pair(make(*r, false), int64_t{-1});
    // The dims along which u varies: those a broadcast reads from its operand, or u's own
    // dims of size > 1.
    Atom values = u;
    Axes varying;
    if (std::optional<simplify_detail::Spread> sp = simplify_detail::spread_of(s_, u)) {
      values = sp->x;
      for (int64_t d = 0; d < shape.size(); ++d)
        if (sp->source[static_cast<size_t>(d)] >= 0 && shape[d] > 1) varying.push_back(d);
    } else {
      for (int64_t d = 0; d < shape.size(); ++d)
        if (shape[d] > 1) varying.push_back(d);
    }
    if (varying.size() > 1) return std::nullopt;
    if (varying.empty()) return std::make_pair(make(values, false), int64_t{-1});
    return std::make_pair(make(values, true), varying[0]);
  }

  /// Merges a leaf varying along v's dim `d` into `f` (a factorisation of an operand of v with
  /// v's shape): the leaf's dim must read f's scale dim, or set it.
  static bool take_scale_dim(Factored& f, int64_t d) {
    if (d < 0) return true;
    const int64_t bd = f.map[static_cast<size_t>(d)];
    if (bd < 0 || (f.scale_dim >= 0 && f.scale_dim != bd)) return false;
    f.scale_dim = bd;
    return true;
  }

  std::optional<Factored> through_producer(const Atom& v, int depth) {
    const Equation* e = s_.producer(v);
    if (!e || e->outputs.size() != 1) return std::nullopt;
    const Primitive* p = e->primitive;
    const Shape shape = s_.aval(v).shape;
    auto same_shape = [&](const Atom& a) { return s_.aval(a).shape == shape; };
    if (p == &unary_family::neg_p()) {
      std::optional<Factored> f = factor(e->inputs[0], depth + 1);
      if (!f) return std::nullopt;
      f->scale = node(Scale::neg, f->scale);
      return f;
    }
    if (p == &shape_family::transpose_p()) {
      std::optional<Factored> f = factor(e->inputs[0], depth + 1);
      if (!f) return std::nullopt;
      const Axes perm = e->params->as<shape_family::TransposeParams>().permutation;
      Axes map;
      for (int64_t k : perm) map.push_back(f->map[static_cast<size_t>(k)]);
      f->map = std::move(map);
      return f;
    }
    if (p == &shape_family::broadcast_in_dim_p() || is_reshape_like(p)) {
      const std::optional<Axes> m = unit_dim_map(s_.aval(e->inputs[0]).shape, shape);
      if (!m) return std::nullopt;
      // A broadcast must also keep x's dims in order to be a pure reshape.
      if (p == &shape_family::broadcast_in_dim_p()) {
        const Axes dims = e->params->as<shape_family::BroadcastInDimParams>().broadcast_dimensions;
        for (size_t i = 0; i < dims.size(); ++i)
          if (s_.aval(e->inputs[0]).shape[static_cast<int64_t>(i)] != shape[dims[i]]) return std::nullopt;
      }
      std::optional<Factored> f = factor(e->inputs[0], depth + 1);
      if (!f) return std::nullopt;
      Axes map;
      for (int64_t k : *m) map.push_back(k >= 0 ? f->map[static_cast<size_t>(k)] : -1);
      f->map = std::move(map);
      return f;
    }
    if ((p == &binary_family::mul_p() || p == &binary_family::div_p()) && e->inputs.size() == 2) {
      for (size_t i : {size_t{0}, size_t{1}}) {
        if (p == &binary_family::div_p() && i == 1) break;  // only x / leaf
        const Atom& x = e->inputs[i];
        if (!same_shape(x) || s_.rank0(x)) continue;
        std::optional<std::pair<ScalePtr, int64_t>> l = leaf_of(e->inputs[1 - i], shape);
        if (!l) continue;
        std::optional<Factored> f = factor(x, depth + 1);
        if (!f || !take_scale_dim(*f, l->second)) continue;
        f->scale = node(p == &binary_family::mul_p() ? Scale::mul : Scale::div, f->scale, l->first);
        return f;
      }
      return std::nullopt;
    }
    if ((p == &binary_family::add_p() || p == &binary_family::sub_p()) && e->inputs.size() == 2) {
      if (!same_shape(e->inputs[0]) || !same_shape(e->inputs[1])) return std::nullopt;
      std::optional<Factored> a = factor(e->inputs[0], depth + 1);
      std::optional<Factored> b = factor(e->inputs[1], depth + 1);
      if (!a || !b || !same_var(a->base, b->base) || a->map != b->map) return std::nullopt;
      if (a->scale_dim >= 0 && b->scale_dim >= 0 && a->scale_dim != b->scale_dim) return std::nullopt;
      a->scale_dim = std::max(a->scale_dim, b->scale_dim);
      a->scale = node(p == &binary_family::add_p() ? Scale::add : Scale::sub, a->scale, b->scale);
      return a;
    }
    return std::nullopt;
  }

  Sweep& s_;
  std::unordered_map<int32_t, std::optional<Factored>> memo_;
  std::vector<Leaf> leaves_;
};

/// The dim of a factored operand of rank `rank` that reads base dim `want`, when exactly one
/// does and every other dim except `contracted` reads none.
std::optional<int64_t> sole_free_dim(const Factored& f, int64_t contracted, int64_t want) {
  std::optional<int64_t> found;
  for (int64_t d = 0; d < static_cast<int64_t>(f.map.size()); ++d) {
    if (d == contracted) continue;
    const int64_t b = f.map[static_cast<size_t>(d)];
    if (b < 0) continue;
    if (b != want || found) return std::nullopt;
    found = d;
  }
  return found;
}

/// The scale `s` from the leaf tensors (each [N] or rank 0); `ones` is [N] of ones.
Tensor evaluate(const ScalePtr& s, const std::vector<Tensor>& leaves, const Tensor& ones) {
  switch (s->kind) {
    case Scale::one: return ones;
    case Scale::leaf: return leaves[s->index];
    case Scale::neg: return lax::neg(evaluate(s->a, leaves, ones));
    default: break;
  }
  const Tensor a = evaluate(s->a, leaves, ones), b = evaluate(s->b, leaves, ones);
  switch (s->kind) {
    case Scale::mul: return lax::mul(a, b);
    case Scale::div: return lax::div(a, b);
    case Scale::add: return lax::add(a, b);
    default: return lax::sub(a, b);
  }
}

/// dot_general(l, r) with l = x·diag(sl) and r = x·diag(sr) in the layouts the factorisations
/// describe -> gram(x, sl·sr) reshaped to the product's output.
std::optional<Atom> gram_of_product(Sweep& s, const Equation& e, const AbstractValue& out) {
  if (e.inputs.size() != 2 || !kFloating.contains(out.dtype)) return std::nullopt;
  const AxisPair contract = e.params->as<dot_general_family::DotGeneralParams>().contract;
  const AxisPair batch = e.params->as<dot_general_family::DotGeneralParams>().batch;
  if (!batch.first.empty() || contract.first.size() != 1 || contract.second.size() != 1) return std::nullopt;
  const int64_t lc = contract.first[0], rc = contract.second[0];
  if (lc < 0 || lc >= s.aval(e.inputs[0]).ndim() || rc < 0 || rc >= s.aval(e.inputs[1]).ndim()) return std::nullopt;
  GramAnalysis analysis(s);
  const std::optional<Factored> fl = analysis.factor(e.inputs[0]);
  const std::optional<Factored> fr = analysis.factor(e.inputs[1]);
  if (!fl || !fr || !same_var(fl->base, fr->base)) return std::nullopt;
  const AbstractValue base = s.aval(fl->base);
  if (base.ndim() != 2 || base.dtype != out.dtype) return std::nullopt;
  const int64_t bc = fl->map[static_cast<size_t>(lc)];
  if (bc < 0 || fr->map[static_cast<size_t>(rc)] != bc) return std::nullopt;
  for (int64_t sd : {fl->scale_dim, fr->scale_dim})
    if (sd >= 0 && sd != bc) return std::nullopt;
  if (!sole_free_dim(*fl, lc, 1 - bc) || !sole_free_dim(*fr, rc, 1 - bc)) return std::nullopt;
  const int64_t n = base.shape[bc], d = base.shape[1 - bc];
  if (static_cast<double>(n) * static_cast<double>(d) * static_cast<double>(d) < kMinGramWork) return std::nullopt;
  std::vector<Atom> args{fl->base};
  for (const Leaf& leaf : analysis.leaves()) args.push_back(leaf.atom);
  std::vector<bool> vector;
  for (const Leaf& leaf : analysis.leaves()) vector.push_back(leaf.vector);
  const ScalePtr sl = fl->scale, sr = fr->scale;
  return s.emit(out, args, [&](const std::vector<Tensor>& xs) {
    const Tensor x = bc == 0 ? xs[0] : lax::transpose(xs[0], {1, 0});
    std::vector<Tensor> leaves;
    for (size_t i = 1; i < xs.size(); ++i) leaves.push_back(lax::reshape(xs[i], vector[i - 1] ? Shape{n} : Shape{}));
    const Tensor ones = lax::broadcast_in_dim(fluxion::ones({}, out.dtype), Shape{n}, {});
    Tensor scale = lax::mul(evaluate(sl, leaves, ones), evaluate(sr, leaves, ones));
    if (scale.ndim() == 0) scale = lax::mul(ones, scale);
    return lax::reshape(lax::gram(x, scale), out.shape);
  });
}

// ---------------------------------------------------------------- symmetric transpose

/// Whether `v` is unchanged by swapping its dims d1 and d2 (of equal size).
bool symmetric_in(const Sweep& s, const Atom& v, int64_t d1, int64_t d2, int depth) {
  if (d1 == d2 || s.splat(v)) return true;
  const AbstractValue a = s.aval(v);
  if (a.ndim() == 0) return true;
  const Tensor c = s.constant(v);
  if (c.defined()) return a.ndim() == 2 && simplify_detail::constant_facts(c).identity;
  const Equation* e = s.producer(v);
  if (!e || e->outputs.size() != 1 || depth >= kMaxDepth) return false;
  const Primitive* p = e->primitive;
  if (p == &gram_family::gram_p()) return true;  // rank 2: {d1, d2} = {0, 1}
  if (p == &shape_family::transpose_p()) {
    const Axes perm = e->params->as<shape_family::TransposeParams>().permutation;
    return symmetric_in(s, e->inputs[0], perm[static_cast<size_t>(d1)], perm[static_cast<size_t>(d2)], depth + 1);
  }
  if (p == &shape_family::broadcast_in_dim_p()) {
    // Constant along a new or expanded dim; symmetric when both dims are such, or both read x.
    std::optional<simplify_detail::Spread> sp = simplify_detail::spread_of(s, v);
    if (!sp) return false;
    const int64_t x1 = sp->source[static_cast<size_t>(d1)], x2 = sp->source[static_cast<size_t>(d2)];
    if (x1 < 0 && x2 < 0) return true;
    if (x1 < 0 || x2 < 0) return false;
    return symmetric_in(s, sp->x, x1, x2, depth + 1);
  }
  if (is_reshape_like(p)) {
    const std::optional<Axes> m = unit_dim_map(s.aval(e->inputs[0]).shape, a.shape);
    if (!m) return false;
    const int64_t x1 = (*m)[static_cast<size_t>(d1)], x2 = (*m)[static_cast<size_t>(d2)];
    if (x1 < 0 || x2 < 0) return x1 == x2;  // both size 1
    return symmetric_in(s, e->inputs[0], x1, x2, depth + 1);
  }
  if (!p->traits.elementwise) return false;
  for (const Atom& x : e->inputs)
    if (s.aval(x).ndim() != 0 && !symmetric_in(s, x, d1, d2, depth + 1)) return false;
  return true;
}

/// transpose(v, perm) where perm swaps two dims and v is symmetric in them -> v.
std::optional<Atom> symmetric_transpose(Sweep& s, const Equation& e, const AbstractValue&) {
  const Axes perm = e.params->as<shape_family::TransposeParams>().permutation;
  Axes moved;
  for (int64_t k = 0; k < static_cast<int64_t>(perm.size()); ++k)
    if (perm[static_cast<size_t>(k)] != k) moved.push_back(k);
  if (moved.size() != 2 || perm[static_cast<size_t>(moved[0])] != moved[1]) return std::nullopt;
  if (!symmetric_in(s, e.inputs[0], moved[0], moved[1], 0)) return std::nullopt;
  return e.inputs[0];
}

}  // namespace simplify_symmetric
}  // namespace fluxion::passes
