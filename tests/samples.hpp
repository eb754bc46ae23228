/// The sample registry: per primitive, sample inputs (rank 0, size-0 dims, broadcasting pairs)
/// and bad inputs with the error they must raise. The rule suites iterate it.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

namespace fluxion::testing {

/// One application of a primitive: `fn` must bind exactly that primitive once (the harness stages
/// it to recover the params), on `inputs`. `expected` are the output avals, written by hand.
struct Sample {
  std::string label;
  std::vector<Tensor> inputs;
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn;
  std::vector<AbstractValue> expected;
  /// False where finite differences cannot check derivatives (e.g. an f32 result of f64 inputs).
  bool differentiable = true;
  /// True for collectives (tests/samples_collectives.cpp): `fn` runs the primitive inside
  /// fx::vmap(..., fx::axis_name), so staged it holds the batched equations, not the primitive. Suites that
  /// compare one staged equation's kernels across backends skip such samples.
  bool collective_form = false;
};

/// A call that must throw: `run` calls the op with bad input; the harness checks the exception's
/// type with `is_expected` and that its message contains `message_contains`.
struct BadInput {
  std::string label;
  std::function<void()> run;
  std::function<bool(const std::exception&)> is_expected;
  std::string type_name;
  std::string message_contains;
};

/// Builds a BadInput expecting exception type E.
template <class E> BadInput bad(std::string label, std::string message_contains, std::function<void()> run) {
  return BadInput{std::move(label), std::move(run),
                  [](const std::exception& e) { return dynamic_cast<const E*>(&e) != nullptr; }, typeid(E).name(),
                  std::move(message_contains)};
}

/// Samples of one primitive: `make(dtype)` returns samples for floating dtype f32 or f64 (and may
/// add samples of other dtypes); `bad` lists at least two bad inputs.
struct PrimitiveSamples {
  std::function<std::vector<Sample>(DType)> make;
  std::vector<BadInput> bad;
};

/// Registers the samples of `primitive` (by name). Returns true so it can initialise a static.
bool register_samples(const std::string& primitive, PrimitiveSamples samples);
const std::map<std::string, PrimitiveSamples>& sample_registry();

/// Deterministic pseudo-random tensor with values uniform in [lo, hi) (integers: rounded; bool:
/// coin flips). The same (shape, dtype, seed, lo, hi) always gives the same values.
Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, double lo = -2.0, double hi = 2.0);

/// random_tensor's values in [-2, 2) rounded to multiples of 1/16, in dtype `dtype`: products of
/// two and their sums over a few hundred terms are exact in f32 and f64, in any order.
Tensor grid_tensor(const Shape& shape, DType dtype, uint64_t seed);

/// Wraps a single-output function as a Sample::fn.
template <class F> std::function<std::vector<Tensor>(const std::vector<Tensor>&)> unary_fn(F f) {
  return [f](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in[0])}; };
}
template <class F> std::function<std::vector<Tensor>(const std::vector<Tensor>&)> binary_fn(F f) {
  return [f](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in[0], in[1])}; };
}
template <class F> std::function<std::vector<Tensor>(const std::vector<Tensor>&)> ternary_fn(F f) {
  return [f](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in[0], in[1], in[2])}; };
}

/// The device the registry suites that opt in (test_rules, test_jit_equals_eager) run their samples
/// on: cuda:0 when FLUXION_TEST_DEVICE=cuda and a GPU is usable (bench/gpu_check.sh), else the CPU.
Device test_device();
/// `samples` with their inputs moved to test_device() (a sample's own constants stay where it made them).
std::vector<Sample> on_test_device(std::vector<Sample> samples);

/// Elementwise comparison with a per-dtype tolerance (f32: atol 1e-6 + rtol 1e-5; f64: atol
/// 1e-13 + rtol 1e-12; integers and bool exact; NaN equals NaN). Returns "" or a description of
/// the first mismatch; `worst_rel` receives the largest relative error seen.
std::string compare_tensors(const Tensor& got, const Tensor& want, double* worst_rel = nullptr);

}  // namespace fluxion::testing
