// Samples of the primitives holding sub-Jaxprs: jit_call (a jit'd function seen from outside).
// Each sample calls a jit'd composite function once, so the rule suite checks jit_call's jvp,
// transpose and batching rules through the same derivative, vmap and composition checks as the
// primitives inside it.
#include "samples.hpp"

namespace fluxion::testing {
namespace control_flow_samples {

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

std::vector<Sample> jit_call_samples(DType dt) {
  std::vector<Sample> s;
  // Elementwise chain of two inputs (fused by the executor), several shapes.
  auto chain = jit([](const Tensor& x, const Tensor& y) { return sin(x) * y + x * x / (y * y + 1.0); });
  for (const Shape& shape : {Shape{3, 4}, Shape{}, Shape{0, 3}, Shape{5000}}) {
    Tensor x = random_tensor(shape, dt, 1), y = random_tensor(shape, dt, 2);
    s.push_back(Sample{"elementwise chain " +
                           [&] {
                             std::ostringstream o;
                             o << x.aval();
                             return o.str();
                           }(),
                       {x, y},
                       binary_fn(chain),
                       {AbstractValue{shape, dt}}});
  }
  // A matrix product, nonlinearity and reduction: non-fused kernels and a pooled buffer.
  auto layer = jit([](const Tensor& w, const Tensor& x) { return sum(tanh(matmul(w, x)), {1}); });
  s.push_back(Sample{"tanh(W x) summed",
                     {random_tensor({3, 4}, dt, 3), random_tensor({4, 2}, dt, 4)},
                     binary_fn(layer),
                     {AbstractValue{{3}, dt}}});
  // Several outputs, one of them a reshape (a view) of an input, one rank-0.
  auto multi = jit([](const Tensor& x) {
    return std::make_tuple(x * 2.0, sum(exp(x)), reshape(x, {static_cast<int64_t>(x.size())}));
  });
  s.push_back(Sample{"three outputs",
                     {random_tensor({2, 3}, dt, 5)},
                     [multi](const std::vector<Tensor>& in) {
                       auto [a, b, c] = multi(in[0]);
                       return std::vector<Tensor>{a, b, c};
                     },
                     {AbstractValue{{2, 3}, dt}, AbstractValue{{}, dt}, AbstractValue{{6}, dt}}});
  // A closed-over constant and a nested jit (inlined by the outer one).
  Tensor c = random_tensor({4}, dt, 6);
  auto inner = jit([](const Tensor& x) { return sigmoid(x) * x; });
  auto outer = jit([c, inner](const Tensor& x) { return inner(x * c) - c; });
  s.push_back(Sample{"closure and nested jit", {random_tensor({4}, dt, 7)}, unary_fn(outer), {AbstractValue{{4}, dt}}});
  return s;
}

std::vector<BadInput> jit_call_bad() {
  auto f = jit([](const Tensor& x) { return sin(x); });
  // The traced Jaxpr of f at f32[3], bound by hand to inputs it was not traced for.
  auto params = [f] {
    Jaxpr j = make_jaxpr(f)(zeros({3}, f32));
    return j.equations.at(0).params;
  };
  return {bad<ShapeError>("wrong shape", "[jit_call] input 0 is f32[4] but the function was traced for f32[3]",
                          [params] { fluxion::bind(jit_call_p(), {zeros({4}, f32)}, *params()); }),
          bad<ShapeError>("wrong count", "[jit_call] the traced function takes 1 tensors, got 2", [params] {
            fluxion::bind(jit_call_p(), {zeros({3}, f32), zeros({3}, f32)}, *params());
          })};
}

const bool registered = register_samples("jit_call", {&jit_call_samples, jit_call_bad()});

// ---- cond, while, scan: each sample calls fx::cond / switch_ / while_loop / scan once ----

std::string aval_text(const Tensor& t) {
  std::ostringstream o;
  o << t.aval();
  return o.str();
}

std::vector<Sample> cond_samples(DType dt) {
  std::vector<Sample> s;
  for (const Shape& shape : {Shape{3}, Shape{}, Shape{2, 2}}) {
    for (bool taken : {true, false}) {
      Tensor x = random_tensor(shape, dt, 11);
      s.push_back(Sample{"cond " + aval_text(x) + (taken ? " true" : " false"),
                         {scalar<bool>(taken), x},
                         [](const std::vector<Tensor>& in) {
                           return std::vector<Tensor>{cond(
                               in[0], [](const Tensor& v) { return sin(v) * 2.0 + v * v; },
                               [](const Tensor& v) { return cos(v) * v; }, in[1])};
                         },
                         {AbstractValue{shape, dt}}});
    }
  }
  // Pytree operands and results, and a branch closing over an input.
  s.push_back(Sample{
      "cond pytree with closure",
      {scalar<bool>(true), random_tensor({3}, dt, 12), random_tensor({}, dt, 13)},
      [](const std::vector<Tensor>& in) {
        Tensor w = in[2];
        auto [a, b] = cond(
            in[0], [w](const std::pair<Tensor, Tensor>& p) { return std::make_pair(p.first * w, sum(p.first) + w); },
            [](const std::pair<Tensor, Tensor>& p) { return std::make_pair(exp(p.first), p.second * 3.0); },
            std::make_pair(in[1], in[2]));
        return std::vector<Tensor>{a, b};
      },
      {AbstractValue{{3}, dt}, AbstractValue{{}, dt}}});
  // switch_ over three branches with an integer index.
  using Branch = std::function<Tensor(const Tensor&)>;
  for (int idx : {0, 2}) {
    s.push_back(Sample{"switch_ index " + std::to_string(idx),
                       {scalar<int32_t>(idx), random_tensor({4}, dt, 14)},
                       [](const std::vector<Tensor>& in) {
                         std::vector<Branch> bs{[](const Tensor& v) { return tanh(v); },
                                                [](const Tensor& v) { return v * 3.0; },
                                                [](const Tensor& v) { return v * v * v; }};
                         return std::vector<Tensor>{switch_(in[0], bs, in[1])};
                       },
                       {AbstractValue{{4}, dt}}});
  }
  return s;
}

std::vector<BadInput> cond_bad() {
  return {bad<ShapeError>("mismatched branch avals", "[cond] branch 0 returns (f32[]) but branch 1 returns (f32[3])",
                          [] {
                            cond(
                                scalar<bool>(true), [](const Tensor& x) { return x; },
                                [](const Tensor& x) { return sum(x); }, zeros({3}, f32));
                          }),
          bad<ShapeError>("non-scalar predicate", "[cond] the predicate must be a scalar, got bool[3]", [] {
            cond(
                zeros({3}, boolean), [](const Tensor& x) { return x; }, [](const Tensor& x) { return -x; },
                zeros({3}, f32));
          })};
}

// Counter carries (floating, so the rule suite differentiates them) make trip counts depend on
// the inputs: vmap's scaled copies take 2 or 3 steps, exercising the batched predicate.
std::vector<Sample> while_samples(DType dt) {
  std::vector<Sample> s;
  for (const Shape& shape : {Shape{3}, Shape{}}) {
    Tensor x = random_tensor(shape, dt, 21);
    s.push_back(Sample{"while " + aval_text(x),
                       {x, full({}, 1.0, dt)},
                       [](const std::vector<Tensor>& in) {
                         auto [v, c] =
                             while_loop([](const std::pair<Tensor, Tensor>& st) { return st.second < 3.2; },
                                        [](const std::pair<Tensor, Tensor>& st) {
                                          return std::make_pair(sin(st.first) * 0.9 + st.first * 0.5, st.second + 1.0);
                                        },
                                        std::make_pair(in[0], in[1]), max_steps(6));
                         return std::vector<Tensor>{v, c};
                       },
                       {AbstractValue{shape, dt}, AbstractValue{{}, dt}}});
  }
  s.push_back(Sample{
      "while pytree carry with closure",
      {random_tensor({2}, dt, 22), random_tensor({2}, dt, 23), random_tensor({}, dt, 24)},
      [](const std::vector<Tensor>& in) {
        Tensor w = in[2];
        using St = std::tuple<Tensor, Tensor, Tensor>;
        auto [a, b, k] =
            while_loop([](const St& st) { return std::get<2>(st) < 2.5; },
                       [w](const St& st) {
                         return St{std::get<0>(st) * w + std::get<1>(st), tanh(std::get<0>(st)), std::get<2>(st) + 1.0};
                       },
                       St{in[0], in[1], zeros({}, in[0].dtype())}, max_steps(5));
        return std::vector<Tensor>{a, b, k};
      },
      {AbstractValue{{2}, dt}, AbstractValue{{2}, dt}, AbstractValue{{}, dt}}});
  return s;
}

std::vector<BadInput> while_bad() {
  return {bad<ShapeError>("carry aval changed by the body",
                          "[while_loop] body_fn changed the carry: leaf 0 is f32[3] on entry but f32[] after the body",
                          [] {
                            while_loop([](const Tensor& x) { return sum(x) < 1.0; },
                                       [](const Tensor& x) { return sum(x); }, zeros({3}, f32));
                          }),
          bad<ShapeError>("non-scalar predicate", "[while_loop] cond_fn must return a rank-0 bool, got bool[3]", [] {
            while_loop([](const Tensor& x) { return x < 1.0; }, [](const Tensor& x) { return x + 1.0; },
                       zeros({3}, f32));
          })};
}

std::vector<Sample> scan_samples(DType dt) {
  std::vector<Sample> s;
  s.push_back(Sample{"scan carry f[3] xs f[4,3]",
                     {random_tensor({3}, dt, 31), random_tensor({4, 3}, dt, 32)},
                     [](const std::vector<Tensor>& in) {
                       auto [c, ys] = scan(
                           [](const Tensor& c, const Tensor& x) { return std::make_pair(sin(c) * x + c * 0.5, c * x); },
                           in[0], in[1]);
                       return std::vector<Tensor>{c, ys};
                     },
                     {AbstractValue{{3}, dt}, AbstractValue{{4, 3}, dt}}});
  s.push_back(Sample{"scan rank-0 carry reverse",
                     {random_tensor({}, dt, 33), random_tensor({5}, dt, 34)},
                     [](const std::vector<Tensor>& in) {
                       auto [c, ys] = scan(
                           [](const Tensor& c, const Tensor& x) { return std::make_pair(tanh(c * x) + x, exp(c) * x); },
                           in[0], in[1], reverse);
                       return std::vector<Tensor>{c, ys};
                     },
                     {AbstractValue{{}, dt}, AbstractValue{{5}, dt}}});
  s.push_back(Sample{"scan pytree carry with closure",
                     {random_tensor({2}, dt, 35), random_tensor({}, dt, 36), random_tensor({3, 2}, dt, 37),
                      random_tensor({2}, dt, 38)},
                     [](const std::vector<Tensor>& in) {
                       Tensor w = in[3];
                       using C = std::pair<Tensor, Tensor>;
                       auto [c, ys] = scan(
                           [w](const C& c, const Tensor& x) {
                             C next{c.first * w + x, c.second + sum(c.first * x)};
                             return std::make_pair(next, std::make_tuple(sin(c.second) * x));
                           },
                           C{in[0], in[1]}, in[2]);
                       return std::vector<Tensor>{c.first, c.second, std::get<0>(ys)};
                     },
                     {AbstractValue{{2}, dt}, AbstractValue{{}, dt}, AbstractValue{{3, 2}, dt}}});
  return s;
}

std::vector<BadInput> scan_bad() {
  return {bad<ShapeError>("carry aval changed by the body",
                          "[scan] f changed the carry: leaf 0 is f32[3] on entry but f32[] after f",
                          [] {
                            scan([](const Tensor& c, const Tensor& x) { return std::make_pair(sum(c * x), x); },
                                 zeros({3}, f32), zeros({2, 3}, f32));
                          }),
          bad<ShapeError>("xs of different lengths", "[scan] xs leaves have different leading sizes", [] {
            scan([](const Tensor& c, const std::pair<Tensor, Tensor>& x) { return std::make_pair(c, x.first); },
                 zeros({}, f32), std::make_pair(zeros({2}, f32), zeros({3}, f32)));
          })};
}

const bool registered_cond = register_samples("cond", {&cond_samples, cond_bad()});
const bool registered_while = register_samples("while", {&while_samples, while_bad()});
const bool registered_scan = register_samples("scan", {&scan_samples, scan_bad()});

}  // namespace control_flow_samples
}  // namespace fluxion::testing
