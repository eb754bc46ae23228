// The interpreter of random programs: each node evaluated with the public ops (ops.hpp, lax.hpp,
// control_flow.hpp, checkpoint.hpp, jit.hpp, transforms.hpp), so that whatever transform is active
// (none, jit, vmap, grad, jvp...) sees exactly the ops a user would write.
#include <functional>
#include <stdexcept>

#include "fuzz/program.hpp"

namespace fluxion::fuzz {

namespace {

thread_local std::vector<int>* predicate_log = nullptr;
thread_local bool planted_bug = false;
thread_local int run_depth = 0;

// Increments run_depth for the duration of a (sub-)program run.
struct DepthGuard {
  DepthGuard() { ++run_depth; }
  ~DepthGuard() { --run_depth; }
};

// A data-dependent predicate's value, logged when it is concrete and the run is the top level.
void log_predicate(const Tensor& t) {
  if (!predicate_log || run_depth != 1 || t.is_tracer()) return;
  predicate_log->push_back(static_cast<int>(t.item<int32_t>()));
}

Tensor one_plus_square(const Tensor& a) { return 1.0 + square(a); }

// The inputs of a sub-program: `front` followed by the node's arguments from `from` on.
std::vector<Tensor> sub_inputs(std::vector<Tensor> front, const std::vector<Tensor>& args, size_t from) {
  front.insert(front.end(), args.begin() + static_cast<std::ptrdiff_t>(from), args.end());
  return front;
}

Tensor eval_control_flow(const Node& nd, const std::vector<Tensor>& a) {
  switch (nd.op) {
    case Op::Cond: {
      Tensor pred;
      size_t first = 0;
      if (nd.flag) {
        pred = sum(a[0]) > nd.x;
        log_predicate(astype(pred, i32));
        first = 1;
      } else {
        pred = nd.constant;
      }
      std::vector<Tensor> ops(a.begin() + static_cast<std::ptrdiff_t>(first), a.end());
      const Program& f = *nd.subs[0];
      const Program& t = *nd.subs[1];
      return cond(
          pred, [&t](const std::vector<Tensor>& o) { return run1(t, o); },
          [&f](const std::vector<Tensor>& o) { return run1(f, o); }, ops);
    }
    case Op::Switch: {
      Tensor index;
      size_t first = 0;
      if (nd.flag) {
        Tensor s = sum(a[0]);
        index = astype(s > nd.x, i32) + astype(s > nd.y, i32);
        log_predicate(index);
        first = 1;
      } else {
        index = nd.constant;
      }
      std::vector<Tensor> ops(a.begin() + static_cast<std::ptrdiff_t>(first), a.end());
      std::vector<std::function<Tensor(const std::vector<Tensor>&)>> branches;
      for (const auto& sub : nd.subs) {
        const Program* b = sub.get();
        branches.push_back([b](const std::vector<Tensor>& o) { return run1(*b, o); });
      }
      return switch_(index, branches, ops);
    }
    case Op::Scan: {
      const Program& body = *nd.subs[0];
      auto step = [&body, &a](const Tensor& c, const Tensor& x) {
        std::vector<Tensor> out = run(body, sub_inputs({c, x}, a, 2));
        return std::make_pair(out[0], out[1]);
      };
      auto r = nd.flag ? scan(step, a[0], a[1], reverse) : scan(step, a[0], a[1]);
      return nd.n == 0 ? r.first : r.second;
    }
    case Op::ForiLoop: {
      const Program& body = *nd.subs[0];
      DType dt = a[0].dtype();
      auto step = [&body, &a, dt](const Tensor& i, const Tensor& c) {
        return run1(body, sub_inputs({astype(i, dt), c}, a, 1));
      };
      if (nd.flag)
        return fori_loop(scalar<int32_t>(static_cast<int32_t>(nd.ints[0])),
                         scalar<int32_t>(static_cast<int32_t>(nd.ints[1])), step, a[0]);
      return fori_loop(nd.ints[0], nd.ints[1], step, a[0]);
    }
    case Op::WhileLoop: {
      const Program& body = *nd.subs[0];
      DType dt = a[0].dtype();
      int64_t trips = nd.n;
      using State = std::pair<Tensor, Tensor>;
      auto c = [trips](const State& s) { return s.first < static_cast<double>(trips); };
      auto b = [&body, &a, dt](const State& s) {
        return State{s.first + 1, run1(body, sub_inputs({astype(s.first, dt), s.second}, a, 1))};
      };
      State init{scalar<int32_t>(0), a[0]};
      return while_loop(c, b, init, nd.ints[0] >= 0 ? max_steps(nd.ints[0]) : MaxSteps{}).second;
    }
    case Op::GradOf: {
      const Program& sub = *nd.subs[0];
      auto f = [&sub, &a](const Tensor& x) { return run1(sub, sub_inputs({x}, a, 1)); };
      return grad(f)(a[0]);
    }
    case Op::JvpOf: {
      const Program& sub = *nd.subs[0];
      size_t passed = static_cast<size_t>(nd.n);  // 2: the tangent is a[1]; 1: the constant
      auto f = [&sub, &a, passed](const Tensor& x) { return run1(sub, sub_inputs({x}, a, passed)); };
      return jvp(f, a[0], passed == 2 ? a[1] : nd.constant).second;
    }
    case Op::VmapOf: {
      const Program& sub = *nd.subs[0];
      auto f = [&sub, &a](const Tensor& x) { return run1(sub, sub_inputs({x}, a, 1)); };
      return vmap(f)(a[0]);
    }
    case Op::JitOf:
    case Op::CheckpointOf: {
      const Program& sub = *nd.subs[0];
      size_t passed = static_cast<size_t>(nd.n);
      std::vector<Tensor> args(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(passed));
      auto f = [&sub, &a, passed](const std::vector<Tensor>& xs) { return run1(sub, sub_inputs(xs, a, passed)); };
      return nd.op == Op::JitOf ? jit(f)(args) : checkpoint(f)(args);
    }
    case Op::CustomJvp: {
      // a * sigmoid(b), with its jvp rule written out.
      double factor = planted_bug ? 1.5 : 1.0;
      auto f = custom_jvp([](const Tensor& x, const Tensor& y) { return x * sigmoid(y); },
                          [factor](const std::tuple<Tensor, Tensor>& p, const std::tuple<Tensor, Tensor>& t) {
                            const auto& [x, y] = p;
                            const auto& [tx, ty] = t;
                            Tensor s = sigmoid(y);
                            return std::make_pair(x * s, (tx * s + x * s * (1.0 - s) * ty) * factor);
                          });
      return f(a[0], a[1]);
    }
    case Op::CustomVjp: {
      // x sin(x), with its vjp written out (the residual is x).
      auto f = custom_vjp([](const Tensor& x) { return x * sin(x); },
                          [](const Tensor& x) { return std::make_pair(x * sin(x), x); },
                          [](const Tensor& x, const Tensor& ct) { return ct * (sin(x) + x * cos(x)); });
      return f(a[0]);
    }
    default: throw std::logic_error(std::string("fuzz: not a control-flow op: ") + op_name(nd.op));
  }
}

Tensor eval_node(const Node& nd, const std::vector<Tensor>& a) {
  const std::vector<int64_t>& v = nd.ints;
  switch (nd.op) {
    case Op::Neg: return -a[0];
    case Op::Sin: return sin(a[0]);
    case Op::Cos: return cos(a[0]);
    case Op::Tanh: return tanh(a[0]);
    case Op::Sigmoid: return sigmoid(a[0]);
    case Op::Softplus: return softplus(a[0]);
    case Op::Exp: return exp(a[0]);
    case Op::Square: return square(a[0]);
    case Op::LogOnePlusSquare: return log(one_plus_square(a[0]));
    case Op::SqrtOnePlusSquare: return sqrt(one_plus_square(a[0]));
    case Op::RsqrtOnePlusSquare: return rsqrt(one_plus_square(a[0]));
    case Op::Expm1: return expm1(a[0]);
    case Op::Log1pSquare: return log1p(square(a[0]));
    case Op::PowOnePlusSquare: return pow(one_plus_square(a[0]), nd.x);
    case Op::ScaleShift: return a[0] * nd.x + nd.y;
    case Op::ReciprocalOnePlusSquare: return nd.x / one_plus_square(a[0]);
    case Op::Squash: return tanh(a[0]) * nd.x;
    case Op::Convert: return astype(a[0], nd.aval.dtype);
    case Op::Softmax: return softmax(a[0], v[0]);
    case Op::LogSoftmax: return log_softmax(a[0], v[0]);
    case Op::Cumsum:
      if (nd.flag) return lax::cumsum(a[0], v[0], /*reverse=*/true);
      return cumsum(a[0], v[0]);
    case Op::Add: return a.size() == 1 ? a[0] + nd.x : a[0] + a[1];
    case Op::Sub: return a.size() == 1 ? nd.x - a[0] : a[0] - a[1];
    case Op::Mul: return a.size() == 1 ? a[0] * nd.x : a[0] * a[1];
    case Op::DivOnePlusSquare: return a[0] / one_plus_square(a[1]);
    case Op::Maximum: return a.size() == 1 ? maximum(a[0], nd.x) : maximum(a[0], a[1] + nd.x);
    case Op::Minimum: return a.size() == 1 ? minimum(a[0], nd.x) : minimum(a[0], a[1] + nd.x);
    case Op::Atan2: return atan2(a[0], 1.5 + square(a[1]));
    case Op::PowBase: return pow(one_plus_square(a[0]), tanh(a[1]));
    case Op::Where: return a.size() == 1 ? where(nd.constant, a[0], nd.x) : where(nd.constant, a[0], a[1]);
    case Op::Sum: return sum(a[0], v, nd.flag);
    case Op::Mean: return mean(a[0], v, nd.flag);
    case Op::Prod: return prod(a[0], v, nd.flag);
    case Op::Max: return max(a[0], v, nd.flag);
    case Op::Min: return min(a[0], v, nd.flag);
    case Op::LogSumExp: return logsumexp(a[0], v, nd.flag);
    case Op::Norm: return norm(a[0], v, nd.flag);
    case Op::Reshape: return reshape(a[0], v);
    case Op::Transpose: return transpose(a[0], v);
    case Op::BroadcastTo: return broadcast_to(a[0], Shape(v));
    case Op::ExpandDims: return expand_dims(a[0], v);
    case Op::Squeeze: return squeeze(a[0], v);
    case Op::Slice: return slice(a[0], v, nd.ints2, nd.ints3);
    case Op::Concatenate: return concatenate(a, v[0]);
    case Op::Stack: return stack(a, v[0]);
    case Op::Pad: return lax::pad(a[0], full({}, nd.x, a[0].dtype()), v, nd.ints2, nd.ints3);
    case Op::DynamicSlice:
    case Op::DynamicUpdateSlice: {
      std::vector<Tensor> starts;
      for (int64_t s : v) starts.push_back(scalar<int32_t>(static_cast<int32_t>(s)));
      if (nd.op == Op::DynamicSlice) return lax::dynamic_slice(a[0], starts, nd.ints2);
      return lax::dynamic_update_slice(a[0], a[1], starts);
    }
    case Op::Take: return v.empty() ? take(a[0], nd.constant) : take(a[0], nd.constant, v[0]);
    case Op::Ravel: return ravel(a[0]);
    case Op::Matmul: return matmul(a[0], a.size() == 1 ? nd.constant : a[1]);
    case Op::Outer: return outer(a[0], a[1]);
    case Op::DotGeneral: return lax::dot_general(a[0], a[1], {v, nd.ints2}, {nd.ints3, nd.ints4});
    case Op::Solve: {
      // 3 I + 0.5 tanh(C mean(a0)) with |C| <= 1 and n <= 4: diagonally dominant, well conditioned.
      int64_t n = nd.constant.shape()[0];
      Tensor m = eye(n, nd.constant.dtype()) * 3.0 + tanh(nd.constant * mean(a[0])) * 0.5;
      return solve(m, a[1]);
    }
    case Op::Gram: return lax::gram(a[0], a.size() == 1 ? nd.constant : a[1]);
    default: return eval_control_flow(nd, a);
  }
}

}  // namespace

AbstractValue Program::aval_of(int id) const {
  if (id < static_cast<int>(inputs.size())) return inputs[static_cast<size_t>(id)];
  return nodes[static_cast<size_t>(id) - inputs.size()].aval;
}

void set_predicate_log(std::vector<int>* log) { predicate_log = log; }
void set_planted_bug(bool on) { planted_bug = on; }

std::vector<Tensor> run(const Program& p, const std::vector<Tensor>& inputs) {
  if (inputs.size() != p.inputs.size())
    throw std::logic_error("fuzz: run called with " + std::to_string(inputs.size()) + " inputs, program has " +
                           std::to_string(p.inputs.size()));
  DepthGuard depth;
  std::vector<Tensor> values = inputs;
  values.reserve(inputs.size() + p.nodes.size());
  std::vector<Tensor> args;
  for (const Node& nd : p.nodes) {
    args.clear();
    for (int id : nd.args) args.push_back(values[static_cast<size_t>(id)]);
    values.push_back(eval_node(nd, args));
  }
  std::vector<Tensor> outs;
  for (int id : p.outputs) outs.push_back(values[static_cast<size_t>(id)]);
  return outs;
}

Tensor run1(const Program& p, const std::vector<Tensor>& inputs) { return run(p, inputs)[0]; }

}  // namespace fluxion::fuzz
