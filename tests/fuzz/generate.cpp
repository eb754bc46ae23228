// The random program generator: plain ops (elementwise, broadcasting, reductions, shapes,
// indexing, linear algebra). Every value carries a magnitude bound, so that exp, products and
// loops stay finite and smooth ops stay on their smooth domains.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "fuzz/generator.hpp"

namespace fluxion::fuzz {

namespace {

int64_t elements(const Shape& s) { return s.num_elements(); }

// Numpy broadcasting of a and b into `out`; false when they do not broadcast.
bool broadcast(const Shape& a, const Shape& b, Shape& out) {
  size_t n = std::max(a.dims().size(), b.dims().size());
  std::vector<int64_t> d(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i < a.dims().size() ? a.dims()[a.dims().size() - 1 - i] : 1;
    int64_t y = i < b.dims().size() ? b.dims()[b.dims().size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return false;
    d[n - 1 - i] = x == 1 ? y : x;
  }
  out = Shape(d);
  return true;
}

// Numpy matmul's result shape of a @ b into `out`; false when invalid.
bool matmul_shape(const Shape& a, const Shape& b, Shape& out) {
  if (a.size() == 0 || b.size() == 0) return false;
  std::vector<int64_t> a2 = a.dims(), b2 = b.dims();
  if (a.size() == 1) a2.insert(a2.begin(), 1);
  if (b.size() == 1) b2.push_back(1);
  if (a2[a2.size() - 1] != b2[b2.size() - 2]) return false;
  Shape batch;
  if (!broadcast(Shape(a2.begin(), a2.end() - 2), Shape(b2.begin(), b2.end() - 2), batch)) return false;
  std::vector<int64_t> d = batch.dims();
  if (a.size() > 1) d.push_back(a2[a2.size() - 2]);
  if (b.size() > 1) d.push_back(b2.back());
  out = Shape(d);
  return true;
}

// `axis` in [0, rank) written as itself or as the equivalent negative axis.
int64_t maybe_negative(Generator& g, int64_t axis, int64_t rank) { return g.chance(0.3) ? axis - rank : axis; }

// A random shape of `rank` dims whose product is n (n > 0), from n's prime factors.
std::vector<int64_t> factor_shape(Generator& g, int64_t n, int rank) {
  std::vector<int64_t> d(static_cast<size_t>(rank), 1);
  if (rank == 0) return d;
  for (int64_t p = 2; n > 1; ++p)
    while (n % p == 0) {
      d[static_cast<size_t>(g.uniform(0, rank - 1))] *= p;
      n /= p;
    }
  return d;
}

}  // namespace

int Generator::pick(const Scope& s, const std::function<bool(int)>& ok) {
  std::vector<int> c;
  for (int i = 0; i < s.p->num_values(); ++i)
    if (ok(i)) c.push_back(i);
  if (c.empty()) return -1;
  if (chance(0.4)) return c.back();  // long chains are likelier to hit interactions
  if (chance(0.5)) {
    // A value nothing uses yet: the program stays one connected computation, not dead code.
    std::vector<bool> used(static_cast<size_t>(s.p->num_values()), false);
    for (const Node& nd : s.p->nodes)
      for (int a : nd.args) used[static_cast<size_t>(a)] = true;
    std::vector<int> unused;
    for (int i : c)
      if (!used[static_cast<size_t>(i)]) unused.push_back(i);
    if (!unused.empty()) return unused[static_cast<size_t>(uniform(0, static_cast<int>(unused.size()) - 1))];
  }
  return c[static_cast<size_t>(uniform(0, static_cast<int>(c.size()) - 1))];
}

Tensor Generator::constant(const AbstractValue& aval, double lo, double hi) {
  std::vector<double> v(static_cast<size_t>(elements(aval.shape)));
  for (double& x : v) x = aval.dtype == boolean ? (chance(0.5) ? 1 : 0) : real(lo, hi);
  if (aval.dtype == i32) {
    std::vector<int32_t> iv(v.size());
    for (size_t i = 0; i < v.size(); ++i) iv[i] = static_cast<int32_t>(std::floor(v[i]));
    return from_vector(iv, aval.shape);
  }
  if (aval.dtype == boolean) return from_vector(v, aval.shape) > 0.5;
  Tensor t = from_vector(v, aval.shape);
  return aval.dtype == f64 ? t : astype(t, aval.dtype);
}

AbstractValue Generator::aval_of_node(const Scope& s, const Node& nd) {
  Program tiny;
  Node copy = nd;
  for (size_t i = 0; i < nd.args.size(); ++i) {
    tiny.inputs.push_back(s.p->aval_of(nd.args[i]));
    copy.args[i] = static_cast<int>(i);
  }
  tiny.nodes.push_back(copy);
  tiny.outputs = {static_cast<int>(nd.args.size())};
  StageInterpreter stage("fuzz generator");
  std::vector<Tensor> ins;
  for (const AbstractValue& a : tiny.inputs) ins.push_back(stage.new_input(a));
  InterpreterScope scope(stage);
  return run1(tiny, ins).aval();
}

int Generator::add(Scope& s, Node nd, Info info) {
  nd.aval = aval_of_node(s, nd);
  if (elements(nd.aval.shape) > kMaxElements) return -1;
  info.token = fresh_token();
  s.p->nodes.push_back(std::move(nd));
  s.info.push_back(info);
  return bounded(s, s.p->num_values() - 1, kBoundLimit);
}

int Generator::bounded(Scope& s, int id, double limit) {
  if (s.info[static_cast<size_t>(id)].bound <= limit) return id;
  Node nd;
  nd.op = Op::Squash;
  nd.args = {id};
  nd.x = std::min(2.0, limit);
  return add(s, nd, Info{nd.x, s.info[static_cast<size_t>(id)].repeats});
}

int Generator::coerce(Scope& s, int id, const AbstractValue& target) {
  AbstractValue av = s.p->aval_of(id);
  Info info = s.info[static_cast<size_t>(id)];
  if (av.dtype != target.dtype) {
    Node nd;
    nd.op = Op::Convert;
    nd.args = {id};
    nd.aval.dtype = target.dtype;
    id = add(s, nd, info);
  }
  if (av.shape == target.shape) return id;
  Shape b;
  Node nd;
  nd.args = {id};
  if (broadcast(av.shape, target.shape, b) && b == target.shape) {
    nd.op = Op::BroadcastTo;
    nd.ints = target.shape.dims();
    return add(s, nd, Info{info.bound, true});
  }
  if (elements(av.shape) == elements(target.shape)) {
    nd.op = Op::Reshape;
    nd.ints = target.shape.dims();
    return add(s, nd, info);
  }
  nd.op = Op::Sum;  // all axes
  id = add(s, nd, Info{info.bound * static_cast<double>(std::max<int64_t>(1, elements(av.shape))), info.repeats});
  if (target.shape.size() == 0) return id;
  Node bc;
  bc.op = Op::BroadcastTo;
  bc.args = {id};
  bc.ints = target.shape.dims();
  return add(s, bc, Info{s.info[static_cast<size_t>(id)].bound, true});
}

int Generator::fill(Scope& s, int n) {
  int last = s.p->num_values() - 1;
  for (int i = 0; i < n; ++i)
    for (int attempt = 0; attempt < 8; ++attempt) {
      int id = random_node(s);
      if (id >= 0) {
        last = id;
        break;
      }
    }
  return last;
}

int Generator::random_node(Scope& s) {
  bool nest = s.depth < opt_.max_depth;
  // Weights per family; nesting families are rarer inside sub-programs.
  const int w[] = {22,
                   6,
                   20,
                   4,
                   12,
                   12,
                   9,
                   8,
                   nest ? (s.depth ? 2 : 4) : 0,
                   nest ? (s.depth ? 2 : 4) : 0,
                   nest ? (s.depth ? 2 : 5) : 0};
  int total = std::accumulate(std::begin(w), std::end(w), 0), r = uniform(0, total - 1), k = 0;
  while (r >= w[k]) r -= w[k++];
  switch (k) {
    case 0: return unary(s);
    case 1: return along_axis(s);
    case 2: return binary(s);
    case 3: return where(s);
    case 4: return reduction(s);
    case 5: return shape_op(s);
    case 6: return indexing(s);
    case 7: return linear_algebra(s);
    case 8: return control_flow(s);
    case 9: return loop(s);
    default: return inner_transform(s);
  }
}

int Generator::unary(Scope& s) {
  static const Op ops[] = {Op::Neg,
                           Op::Sin,
                           Op::Cos,
                           Op::Tanh,
                           Op::Sigmoid,
                           Op::Softplus,
                           Op::Exp,
                           Op::Square,
                           Op::LogOnePlusSquare,
                           Op::SqrtOnePlusSquare,
                           Op::RsqrtOnePlusSquare,
                           Op::Expm1,
                           Op::Log1pSquare,
                           Op::PowOnePlusSquare,
                           Op::ScaleShift,
                           Op::ReciprocalOnePlusSquare,
                           Op::Convert};
  int a = pick(s, [](int) { return true; });
  Info in = s.info[static_cast<size_t>(a)], out = in;
  double b = in.bound;
  Node nd;
  nd.op = ops[uniform(0, static_cast<int>(std::size(ops)) - 1)];
  nd.args = {a};
  if ((nd.op == Op::Exp || nd.op == Op::Expm1) && b > 3) nd.op = Op::Tanh;
  if (nd.op == Op::Convert && chance(0.5)) nd.op = Op::Sin;  // conversions are rarer than the rest
  switch (nd.op) {
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh:
    case Op::Sigmoid:
    case Op::RsqrtOnePlusSquare: out.bound = 1; break;
    case Op::Softplus: out.bound = b + 1; break;
    case Op::Exp:
    case Op::Expm1: out.bound = std::exp(b) + 1; break;
    case Op::Square: out.bound = b * b; break;
    case Op::LogOnePlusSquare:
    case Op::Log1pSquare: out.bound = std::log1p(b * b); break;
    case Op::SqrtOnePlusSquare: out.bound = std::sqrt(1 + b * b); break;
    case Op::PowOnePlusSquare: {
      static const double exps[] = {0.5, 1.5, -0.5, -1.0, 2.0, 3.0};
      nd.x = exps[uniform(0, 5)];
      out.bound = nd.x > 0 ? std::pow(1 + b * b, nd.x) : 1;
      break;
    }
    case Op::ScaleShift:
      nd.x = real(0.25, 2) * (chance(0.5) ? 1 : -1);
      nd.y = real(-1, 1);
      out.bound = std::fabs(nd.x) * b + std::fabs(nd.y);
      break;
    case Op::ReciprocalOnePlusSquare:
      nd.x = real(0.5, 2) * (chance(0.5) ? 1 : -1);
      out.bound = std::fabs(nd.x);
      break;
    case Op::Convert: nd.aval.dtype = s.p->aval_of(a).dtype == f64 ? f32 : f64; break;
    default: break;
  }
  return add(s, nd, out);
}

int Generator::along_axis(Scope& s) {
  int a = pick(s, [&](int i) { return s.p->aval_of(i).ndim() >= 1; });
  if (a < 0) return -1;
  AbstractValue av = s.p->aval_of(a);
  Info in = s.info[static_cast<size_t>(a)], out = in;
  int64_t rank = av.ndim(), axis = uniform(0, static_cast<int>(rank) - 1);
  double d = static_cast<double>(av.shape[axis]);
  Node nd;
  static const Op ops[] = {Op::Softmax, Op::LogSoftmax, Op::Cumsum};
  nd.op = ops[uniform(0, 2)];
  // log_softmax over a size-1 axis is exactly 0, where norm is not differentiable (see the
  // test's header comment); softmax there is exactly 1: both are left to cumsum.
  if (d == 1) nd.op = Op::Cumsum;
  nd.args = {a};
  nd.flag = nd.op == Op::Cumsum && chance(0.3);  // reverse: lax::cumsum, which takes a non-negative axis
  nd.ints = {nd.flag ? axis : maybe_negative(*this, axis, rank)};
  out.bound = nd.op == Op::Softmax ? 1 : nd.op == Op::LogSoftmax ? 2 * in.bound + std::log(d) + 1 : in.bound * d;
  return add(s, nd, out);
}

int Generator::binary(Scope& s) {
  static const Op ops[] = {Op::Add,     Op::Sub,     Op::Mul,   Op::DivOnePlusSquare,
                           Op::Maximum, Op::Minimum, Op::Atan2, Op::PowBase};
  Node nd;
  nd.op = ops[uniform(0, 7)];
  int a = pick(s, [](int) { return true; });
  Info ia = s.info[static_cast<size_t>(a)];
  bool scalar_form = nd.op <= Op::Mul || nd.op == Op::Maximum || nd.op == Op::Minimum;
  if (scalar_form && chance(0.2)) {
    nd.args = {a};
    nd.x = nd.op == Op::Mul ? real(0.3, 2) * (chance(0.5) ? 1 : -1) : real(-1.5, 1.5);
    double bound = nd.op == Op::Mul ? ia.bound * std::fabs(nd.x) : ia.bound + std::fabs(nd.x);
    // maximum(a, c) repeats c wherever a < c.
    return add(s, nd, Info{bound, ia.repeats || nd.op == Op::Maximum || nd.op == Op::Minimum});
  }
  Shape as = s.p->aval_of(a).shape, out;
  // a - a is exactly zero (norms and maxima of it are not differentiable), also where a
  // sub-program's two inputs are one value of the enclosing program.
  int b = pick(s, [&](int j) {
    return broadcast(as, s.p->aval_of(j).shape, out) && elements(out) <= kMaxElements &&
           !(nd.op == Op::Sub && s.info[static_cast<size_t>(j)].token == ia.token);
  });
  if (b < 0) return -1;
  Info ib = s.info[static_cast<size_t>(b)];
  nd.args = {a, b};
  if (nd.op == Op::Maximum || nd.op == Op::Minimum) nd.x = real(0.1, 0.6) * (chance(0.5) ? 1 : -1);
  double bound = 0;
  switch (nd.op) {
    case Op::Add:
    case Op::Sub: bound = ia.bound + ib.bound; break;
    case Op::Mul: bound = ia.bound * ib.bound; break;
    case Op::DivOnePlusSquare: bound = ia.bound; break;
    case Op::Atan2: bound = 2; break;
    case Op::PowBase: bound = 1 + ia.bound * ia.bound; break;
    default: bound = std::max(ia.bound, ib.bound + std::fabs(nd.x)); break;
  }
  return add(s, nd, Info{bound, ia.repeats || ib.repeats || a == b});
}

int Generator::where(Scope& s) {
  int a = pick(s, [](int) { return true; });
  AbstractValue av = s.p->aval_of(a);
  Info ia = s.info[static_cast<size_t>(a)];
  Node nd;
  nd.op = Op::Where;
  std::vector<int64_t> mask_shape = av.shape.dims();
  for (int64_t& d : mask_shape)
    if (chance(0.25)) d = 1;
  nd.constant = constant(AbstractValue{Shape(mask_shape), boolean}, 0, 1);
  Shape out;
  int b = chance(0.25)
              ? -1
              : pick(s, [&](int j) { return broadcast(av.shape, s.p->aval_of(j).shape, out) && out == av.shape; });
  if (b < 0) {
    nd.args = {a};
    nd.x = real(-1, 1);
    return add(s, nd, Info{std::max(ia.bound, 1.0), true});
  }
  nd.args = {a, b};
  Info ib = s.info[static_cast<size_t>(b)];
  return add(s, nd, Info{std::max(ia.bound, ib.bound), ia.repeats || ib.repeats});
}

int Generator::reduction(Scope& s) {
  static const Op ops[] = {Op::Sum, Op::Mean, Op::Prod, Op::Max, Op::Min, Op::LogSumExp, Op::Norm};
  int a = pick(s, [](int) { return true; });
  AbstractValue av = s.p->aval_of(a);
  Info in = s.info[static_cast<size_t>(a)];
  Node nd;
  nd.op = ops[uniform(0, 6)];
  // Ties make max/min not differentiable (finite differences see the larger one-sided slope).
  if ((nd.op == Op::Max || nd.op == Op::Min) && in.repeats) nd.op = Op::LogSumExp;
  nd.args = {a};
  int64_t rank = av.ndim();
  double k = 1;
  if (rank == 0 || chance(0.25)) {
    k = static_cast<double>(elements(av.shape));
  } else {
    for (int64_t d = 0; d < rank; ++d)
      if (chance(0.5)) {
        nd.ints.push_back(maybe_negative(*this, d, rank));
        k *= static_cast<double>(av.shape[d]);
      }
    if (nd.ints.empty()) k = static_cast<double>(elements(av.shape));
  }
  nd.flag = chance(0.3);
  double b = in.bound + std::fabs(nd.x), bound = b;
  switch (nd.op) {
    case Op::Sum: bound = b * k; break;
    case Op::Prod: bound = std::pow(std::max(b, 1.0), k); break;
    case Op::LogSumExp: bound = b + std::log(std::max(k, 1.0)); break;
    case Op::Norm: bound = b * std::sqrt(k); break;
    default: break;
  }
  return add(s, nd, Info{bound, in.repeats});
}

int Generator::shape_op(Scope& s) {
  int a = pick(s, [](int) { return true; });
  AbstractValue av = s.p->aval_of(a);
  Info in = s.info[static_cast<size_t>(a)];
  const std::vector<int64_t>& d = av.shape.dims();
  int64_t rank = av.ndim(), n = elements(av.shape);
  Node nd;
  nd.args = {a};
  int which = uniform(0, 8);
  switch (which) {
    case 0: {
      nd.op = Op::Reshape;
      nd.ints = factor_shape(*this, n, uniform(n == 1 ? 0 : 1, 3));
      if (!nd.ints.empty() && chance(0.3))
        nd.ints[static_cast<size_t>(uniform(0, static_cast<int>(nd.ints.size()) - 1))] = -1;
      return add(s, nd, in);
    }
    case 1: {
      if (rank < 2) return -1;
      nd.op = Op::Transpose;
      if (chance(0.8)) {
        nd.ints.resize(static_cast<size_t>(rank));
        std::iota(nd.ints.begin(), nd.ints.end(), 0);
        std::shuffle(nd.ints.begin(), nd.ints.end(), rng_);
      }
      return add(s, nd, in);
    }
    case 2: {
      nd.op = Op::BroadcastTo;
      for (int lead = rank >= 3 ? 0 : uniform(0, 2 - static_cast<int>(rank > 1)); lead > 0; --lead)
        nd.ints.push_back(uniform(1, 3));
      for (int64_t x : d) nd.ints.push_back(x == 1 && chance(0.6) ? uniform(2, 3) : x);
      if (elements(Shape(nd.ints)) > kMaxElements) return -1;
      return add(s, nd, Info{in.bound, true});
    }
    case 3: {
      if (rank >= 3) return -1;
      nd.op = Op::ExpandDims;
      if (chance(0.7)) nd.ints = {uniform(-static_cast<int>(rank) - 1, static_cast<int>(rank))};
      else nd.ints = {0, static_cast<int64_t>(uniform(1, static_cast<int>(rank) + 1))};
      return add(s, nd, in);
    }
    case 4: {
      nd.op = Op::Squeeze;
      for (int64_t i = 0; i < rank; ++i)
        if (d[static_cast<size_t>(i)] == 1 && chance(0.6)) nd.ints.push_back(maybe_negative(*this, i, rank));
      if (nd.ints.empty() && std::find(d.begin(), d.end(), 1) == d.end()) return -1;
      return add(s, nd, in);
    }
    case 5: nd.op = Op::Ravel; return add(s, nd, in);
    case 6:
    case 7: {
      // Concatenate (operands equal but along the axis) or stack (equal shapes); dtypes may differ.
      bool stack = which == 7;
      if (!stack && rank == 0) return -1;
      int64_t axis = stack ? uniform(0, static_cast<int>(rank)) : uniform(0, static_cast<int>(rank) - 1);
      nd.op = stack ? Op::Stack : Op::Concatenate;
      Shape out = av.shape;
      for (int k = uniform(1, 2); k > 0; --k) {
        int b = pick(s, [&](int j) {
          Shape bs = s.p->aval_of(j).shape;
          if (bs.size() != rank) return false;
          for (int64_t i = 0; i < rank; ++i)
            if (bs[i] != av.shape[i] && (stack || i != axis)) return false;
          return true;
        });
        if (stack) {
          out = av.shape;
          out.dims().insert(out.dims().begin() + axis, static_cast<int64_t>(nd.args.size() + 1));
        } else {
          out[axis] += s.p->aval_of(b).shape[axis];
        }
        if (elements(out) > kMaxElements) break;
        nd.args.push_back(b);
      }
      if (nd.args.size() < 2) return -1;
      Info info{0, false};
      for (int x : nd.args) {
        info.bound = std::max(info.bound, s.info[static_cast<size_t>(x)].bound);
        info.repeats = info.repeats || s.info[static_cast<size_t>(x)].repeats;
      }
      std::vector<int> sorted = nd.args;
      std::sort(sorted.begin(), sorted.end());
      info.repeats = info.repeats || std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
      nd.ints = {stack ? maybe_negative(*this, axis, rank + 1) : maybe_negative(*this, axis, rank)};
      return add(s, nd, info);
    }
    default: {
      if (rank == 0) return -1;
      nd.op = Op::Pad;
      int64_t size = 1;
      for (int64_t x : d) {
        int64_t lo = uniform(x > 1 ? -1 : 0, 2), hi = uniform(x > 1 ? -1 : 0, 2), in_ = uniform(0, 1);
        int64_t out = x + (x - 1) * in_ + lo + hi;
        if (out < 1) lo = 0, hi = 0, out = x + (x - 1) * in_;
        nd.ints.push_back(lo), nd.ints2.push_back(hi), nd.ints3.push_back(in_);
        size *= out;
      }
      if (size > kMaxElements) return -1;
      nd.x = real(0.2, 1) * (chance(0.5) ? 1 : -1);  // nonzero: an all-zero slice would make norm singular
      return add(s, nd, Info{std::max(in.bound, 1.0), true});
    }
  }
}

int Generator::indexing(Scope& s) {
  int a = pick(s, [&](int i) { return s.p->aval_of(i).ndim() >= 1; });
  if (a < 0) return -1;
  AbstractValue av = s.p->aval_of(a);
  Info in = s.info[static_cast<size_t>(a)];
  const std::vector<int64_t>& d = av.shape.dims();
  int rank = static_cast<int>(av.ndim());
  Node nd;
  nd.args = {a};
  switch (uniform(0, 3)) {
    case 0: {
      nd.op = Op::Slice;
      bool strided = chance(0.4);
      for (int64_t x : d) {
        int64_t start = uniform(0, static_cast<int>(x) - 1);
        nd.ints.push_back(start);
        nd.ints2.push_back(uniform(static_cast<int>(start) + 1, static_cast<int>(x) + (chance(0.2) ? 2 : 0)));
        if (strided) nd.ints3.push_back(uniform(1, 2));
      }
      return add(s, nd, in);
    }
    case 1: {
      nd.op = Op::DynamicSlice;
      for (int64_t x : d) {
        nd.ints.push_back(uniform(-1, static_cast<int>(x)));  // out-of-range starts are clamped
        nd.ints2.push_back(uniform(1, static_cast<int>(x)));
      }
      return add(s, nd, in);
    }
    case 2: {
      nd.op = Op::DynamicUpdateSlice;
      int b = pick(s, [&](int j) {
        AbstractValue bv = s.p->aval_of(j);
        if (bv.ndim() != rank || bv.dtype != av.dtype) return false;
        for (int i = 0; i < rank; ++i)
          if (bv.shape[i] > av.shape[i]) return false;
        return true;
      });
      if (b < 0) return -1;
      nd.args.push_back(b);
      for (int64_t x : d) nd.ints.push_back(uniform(-1, static_cast<int>(x)));
      Info ib = s.info[static_cast<size_t>(b)];
      return add(s, nd, Info{std::max(in.bound, ib.bound), in.repeats || ib.repeats || a == b});
    }
    default: {
      nd.op = Op::Take;
      int64_t axis_size = elements(av.shape);
      if (chance(0.75)) {
        int axis = uniform(0, rank - 1);
        axis_size = d[static_cast<size_t>(axis)];
        nd.ints = {maybe_negative(*this, axis, rank)};
      }
      std::vector<int64_t> ishape;
      for (int r = uniform(0, 2); r > 0; --r) ishape.push_back(uniform(1, 3));
      // Negative indices count from the end; out-of-range ones are clamped (ops.hpp).
      double lo = -static_cast<double>(axis_size) - (chance(0.1) ? 1 : 0);
      double hi = static_cast<double>(axis_size) + (chance(0.1) ? 1 : 0);
      nd.constant = constant(AbstractValue{Shape(ishape), i32}, lo, hi);
      return add(s, nd, Info{in.bound, true});
    }
  }
}

int Generator::linear_algebra(Scope& s) {
  Node nd;
  switch (uniform(0, 4)) {
    case 0: {
      nd.op = Op::Matmul;
      int a = pick(s, [&](int i) { return s.p->aval_of(i).ndim() >= 1; });
      if (a < 0) return -1;
      AbstractValue av = s.p->aval_of(a);
      Shape out;
      int b = chance(0.3) ? -1 : pick(s, [&](int j) {
        return matmul_shape(av.shape, s.p->aval_of(j).shape, out) && elements(out) <= kMaxElements;
      });
      Info ia = s.info[static_cast<size_t>(a)];
      double k = static_cast<double>(av.shape.dims().back());
      if (b < 0) {
        std::vector<int64_t> ws{av.shape.dims().back()};
        if (chance(0.7)) ws.push_back(uniform(1, 4));
        nd.constant = constant(AbstractValue{Shape(ws), av.dtype}, -1, 1);
        nd.args = {a};
        return add(s, nd, Info{ia.bound * k, ia.repeats});
      }
      nd.args = {a, b};
      Info ib = s.info[static_cast<size_t>(b)];
      return add(s, nd, Info{ia.bound * ib.bound * k, ia.repeats || ib.repeats || a == b});
    }
    case 1: {
      nd.op = Op::Outer;
      int a = pick(s, [&](int i) { return elements(s.p->aval_of(i).shape) <= 8; });
      int b = pick(s, [&](int j) { return elements(s.p->aval_of(j).shape) <= 6; });
      if (a < 0 || b < 0) return -1;
      nd.args = {a, b};
      Info ia = s.info[static_cast<size_t>(a)], ib = s.info[static_cast<size_t>(b)];
      return add(s, nd, Info{ia.bound * ib.bound, true});
    }
    case 2: {
      nd.op = Op::DotGeneral;
      int a = pick(s, [&](int i) { return s.p->aval_of(i).ndim() >= 1; });
      if (a < 0) return -1;
      AbstractValue av = s.p->aval_of(a);
      int b = pick(s, [&](int j) {
        AbstractValue bv = s.p->aval_of(j);
        if (bv.dtype != av.dtype) return false;
        for (int64_t x : av.shape.dims())
          if (std::find(bv.shape.dims().begin(), bv.shape.dims().end(), x) != bv.shape.dims().end()) return true;
        return false;
      });
      if (b < 0) return -1;
      AbstractValue bv = s.p->aval_of(b);
      std::vector<std::pair<int64_t, int64_t>> pairs;
      for (int64_t i = 0; i < av.ndim(); ++i)
        for (int64_t j = 0; j < bv.ndim(); ++j)
          if (av.shape[i] == bv.shape[j]) pairs.emplace_back(i, j);
      std::shuffle(pairs.begin(), pairs.end(), rng_);
      std::vector<bool> lu(static_cast<size_t>(av.ndim())), ru(static_cast<size_t>(bv.ndim()));
      double k = 1;
      int want_batch = uniform(0, 1), want_contract = uniform(1, 2);
      for (auto [i, j] : pairs) {
        if (lu[static_cast<size_t>(i)] || ru[static_cast<size_t>(j)]) continue;
        bool batch = want_batch > 0 && (want_contract == 0 || chance(0.5));
        if (!batch && want_contract == 0) continue;
        lu[static_cast<size_t>(i)] = ru[static_cast<size_t>(j)] = true;
        if (batch) nd.ints3.push_back(i), nd.ints4.push_back(j), --want_batch;
        else nd.ints.push_back(i), nd.ints2.push_back(j), --want_contract, k *= static_cast<double>(av.shape[i]);
      }
      nd.args = {a, b};
      Info ia = s.info[static_cast<size_t>(a)], ib = s.info[static_cast<size_t>(b)];
      return add(s, nd, Info{ia.bound * ib.bound * k, ia.repeats || ib.repeats || a == b});
    }
    case 3: {
      nd.op = Op::Solve;
      int b = pick(s, [&](int i) {
        AbstractValue v = s.p->aval_of(i);
        return (v.ndim() == 1 && v.shape[0] <= 4) || ((v.ndim() == 2 || v.ndim() == 3) && v.shape[v.ndim() - 2] <= 4);
      });
      if (b < 0) return -1;
      AbstractValue bv = s.p->aval_of(b);
      int a = pick(s, [&](int i) { return s.p->aval_of(i).dtype == bv.dtype; });
      int64_t n = bv.ndim() == 1 ? bv.shape[0] : bv.shape[bv.ndim() - 2];
      nd.constant = constant(AbstractValue{Shape{n, n}, bv.dtype}, -1, 1);
      nd.args = {a, b};
      Info ib = s.info[static_cast<size_t>(b)];
      return add(s, nd, Info{ib.bound / (3 - 0.5 * static_cast<double>(n)), ib.repeats});
    }
    default: {
      nd.op = Op::Gram;
      int x = pick(s, [&](int i) {
        AbstractValue v = s.p->aval_of(i);
        return v.ndim() == 2 && v.shape[1] * v.shape[1] <= kMaxElements;
      });
      if (x < 0) return -1;
      AbstractValue xv = s.p->aval_of(x);
      int w = pick(s, [&](int j) {
        AbstractValue v = s.p->aval_of(j);
        return v.ndim() == 1 && v.shape[0] == xv.shape[0] && v.dtype == xv.dtype;
      });
      Info ix = s.info[static_cast<size_t>(x)];
      double bw = 1.5;
      if (w < 0 || chance(0.3)) {
        nd.args = {x};
        nd.constant = constant(AbstractValue{Shape{xv.shape[0]}, xv.dtype}, 0.5, 1.5);
      } else {
        nd.args = {x, w};
        bw = s.info[static_cast<size_t>(w)].bound;
      }
      return add(s, nd, Info{ix.bound * ix.bound * bw * static_cast<double>(xv.shape[0]), true});
    }
  }
}

}  // namespace fluxion::fuzz
