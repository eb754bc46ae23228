// Samples of the checkpoint primitive: each sample calls a checkpointed composite function once,
// so the rule suite checks checkpoint's jvp, partial-evaluation, transpose and batching rules
// through the same derivative, vmap and composition checks as the primitives inside it.
#include "samples.hpp"
#include "test_util.hpp"

namespace fluxion::testing {
namespace checkpoint_samples {

std::vector<Sample> samples(DType dt) {
  std::vector<Sample> s;
  // An elementwise chain of two inputs (residuals: sin, cos and products), several shapes.
  auto chain = checkpoint([](const Tensor& x, const Tensor& y) { return sin(x) * y + x * x / (y * y + 1.0); });
  for (const Shape& shape : {Shape{3, 4}, Shape{}, Shape{0, 3}}) {
    Tensor x = random_tensor(shape, dt, 41), y = random_tensor(shape, dt, 42);
    s.push_back(Sample{"elementwise chain " + to_text(x.aval()), {x, y}, binary_fn(chain), {AbstractValue{shape, dt}}});
  }
  // A layer: matrix product, nonlinearity, reduction.
  auto layer = checkpoint([](const Tensor& w, const Tensor& x) { return sum(tanh(matmul(w, x)), {1}); });
  s.push_back(Sample{"tanh(W x) summed",
                     {random_tensor({3, 4}, dt, 43), random_tensor({4, 2}, dt, 44)},
                     binary_fn(layer),
                     {AbstractValue{{3}, dt}}});
  // Pytree argument and result, a static argument, an output that is an input reshaped.
  auto multi = checkpoint([](const std::pair<Tensor, Tensor>& p, double scale) {
    return std::make_tuple(exp(p.first) * p.second * scale, sum(p.first * p.first), reshape(p.second, {6}));
  });
  s.push_back(Sample{"pytree in and out, static scale",
                     {random_tensor({2, 3}, dt, 45), random_tensor({2, 3}, dt, 46)},
                     [multi](const std::vector<Tensor>& in) {
                       auto [a, b, c] = multi(std::make_pair(in[0], in[1]), 1.5);
                       return std::vector<Tensor>{a, b, c};
                     },
                     {AbstractValue{{2, 3}, dt}, AbstractValue{{}, dt}, AbstractValue{{6}, dt}}});
  // Closing over an input (a leading input of the primitive under transforms).
  s.push_back(Sample{"closure over an input",
                     {random_tensor({4}, dt, 47), random_tensor({4}, dt, 48)},
                     [](const std::vector<Tensor>& in) {
                       Tensor w = in[1];
                       auto f = checkpoint([w](const Tensor& x) { return sin(x * w) * w + cos(x); });
                       return std::vector<Tensor>{f(in[0])};
                     },
                     {AbstractValue{{4}, dt}}});
  // Nested checkpoints and a cond inside: partial evaluation replays nested rules.
  auto inner = checkpoint([](const Tensor& x) { return tanh(x) * x; });
  auto nested = checkpoint([inner](const Tensor& x) {
    Tensor y = inner(sin(x));
    return cond(
        sum(y) > 100.0, [](const Tensor& v) { return v * 2.0; }, [](const Tensor& v) { return exp(v) * v; }, inner(y));
  });
  s.push_back(
      Sample{"nested checkpoint and cond", {random_tensor({3}, dt, 49)}, unary_fn(nested), {AbstractValue{{3}, dt}}});
  return s;
}

std::vector<BadInput> checkpoint_bad() {
  // The params of f traced at f32[3], bound by hand to inputs it was not traced for.
  auto params = [] {
    auto f = checkpoint([](const Tensor& x) { return sin(x) * 2.0; });
    Jaxpr j = make_jaxpr(f)(zeros({3}, f32));
    return j.equations.at(0).params;
  };
  return {bad<ShapeError>("wrong shape", "[checkpoint] input 0 is f32[4] but the function was traced for f32[3]",
                          [params] { fluxion::bind(checkpoint_p(), {zeros({4}, f32)}, *params()); }),
          bad<ShapeError>("wrong count", "[checkpoint] the function was traced for 1 tensors, got 2", [params] {
            fluxion::bind(checkpoint_p(), {zeros({3}, f32), zeros({3}, f32)}, *params());
          })};
}

const bool registered = register_samples("checkpoint", {&samples, checkpoint_bad()});

}  // namespace checkpoint_samples
}  // namespace fluxion::testing
