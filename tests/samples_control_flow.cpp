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
    s.push_back(Sample{"elementwise chain " + [&] { std::ostringstream o; o << x.aval(); return o.str(); }(),
                       {x, y}, binary_fn(chain), {AbstractValue{shape, dt}}});
  }
  // A matrix product, nonlinearity and reduction: non-fused kernels and a pooled buffer.
  auto layer = jit([](const Tensor& w, const Tensor& x) { return sum(tanh(matmul(w, x)), {1}); });
  s.push_back(Sample{"tanh(W x) summed", {random_tensor({3, 4}, dt, 3), random_tensor({4, 2}, dt, 4)},
                     binary_fn(layer), {AbstractValue{{3}, dt}}});
  // Several outputs, one of them a reshape (a view) of an input, one rank-0.
  auto multi = jit([](const Tensor& x) {
    return std::make_tuple(x * 2.0, sum(exp(x)), reshape(x, {static_cast<int64_t>(x.size())}));
  });
  s.push_back(Sample{"three outputs", {random_tensor({2, 3}, dt, 5)},
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
          bad<ShapeError>("wrong count", "[jit_call] the traced function takes 1 tensors, got 2",
                          [params] { fluxion::bind(jit_call_p(), {zeros({3}, f32), zeros({3}, f32)}, *params()); })};
}

const bool registered = register_samples("jit_call", {&jit_call_samples, jit_call_bad()});

}  // namespace control_flow_samples
}  // namespace fluxion::testing
