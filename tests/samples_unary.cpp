// Samples of the elementwise unary primitives.
#include <limits>

#include "samples.hpp"

namespace fluxion::testing {
namespace unary_samples {

namespace lax = fluxion::lax;
using Fn = Tensor (*)(const Tensor&);

// Shapes every unary primitive is tried on: rank 0, size-0 dims, vectors, matrices, rank 3.
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s{Shape{}, Shape{0}, Shape{7}, Shape{3, 4}, Shape{2, 0, 3}, Shape{2, 3, 5}};
  return s;
}

std::vector<Sample> samples_for(Fn f, DType dt, double lo, double hi, std::vector<DType> extra = {}) {
  std::vector<Sample> out;
  std::vector<DType> dtypes{dt};
  dtypes.insert(dtypes.end(), extra.begin(), extra.end());
  uint64_t seed = 1;
  for (DType d : dtypes)
    for (const Shape& s : shapes()) {
      std::ostringstream label;
      label << AbstractValue{s, d};
      out.push_back(Sample{label.str(), {random_tensor(s, d, seed++, lo, hi)}, unary_fn(f), {AbstractValue{s, d}}});
    }
  return out;
}

// Two bad inputs for a float-only primitive: an integer and a bool operand.
std::vector<BadInput> float_only_bad(const std::string& name, Fn f) {
  return {
      bad<DTypeError>("integer operand", "[" + name + "] got an operand of type i32[3]", [f] { f(zeros({3}, i32)); }),
      bad<DTypeError>("bool operand", "accepts f32, f64", [f] { f(zeros({2}, boolean)); })};
}

bool register_float_unary(const std::string& name, Fn f, double lo, double hi) {
  return register_samples(name, {[=](DType dt) { return samples_for(f, dt, lo, hi); }, float_only_bad(name, f)});
}

const bool registered = [] {
  register_float_unary("sin", lax::sin, -4, 4);
  register_float_unary("cos", lax::cos, -4, 4);
  register_float_unary("tan", lax::tan, -1.4, 1.4);
  register_samples(
      "exp", {[](DType dt) {
                auto out = samples_for(lax::exp, dt, -5, 5);
                // Underflow to exactly 0, -inf included (logsumexp relies on it).
                Tensor tails = astype(
                    tensor({-std::numeric_limits<double>::infinity(), -1000.0, -745.0, -100.0, -80.0, 0.0, 1.0}), dt);
                out.push_back(Sample{"underflow tails", {tails}, unary_fn(lax::exp), {AbstractValue{Shape{7}, dt}}});
                return out;
              },
              float_only_bad("exp", lax::exp)});
  register_float_unary("log", lax::log, 0.05, 10);
  register_float_unary("log1p", lax::log1p, -0.9, 5);
  register_float_unary("expm1", lax::expm1, -3, 3);
  register_float_unary("sqrt", lax::sqrt, 0, 9);
  register_float_unary("rsqrt", lax::rsqrt, 0.1, 9);
  register_float_unary("tanh", lax::tanh, -4, 4);
  register_float_unary("logistic", lax::logistic, -6, 6);
  register_float_unary("floor", lax::floor, -5, 5);
  register_float_unary("ceil", lax::ceil, -5, 5);
  register_float_unary("round", lax::round, -5, 5);
  auto round_even = [](const Tensor& x) { return lax::round(x, lax::RoundingMethod::to_nearest_even); };
  register_samples(
      "round_nearest_even",
      {[=](DType dt) {
         auto out = samples_for(round_even, dt, -5, 5);
         // Halfway cases go to the even neighbour (round takes them away from zero).
         Tensor halves = astype(tensor({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, -0.25, 4.75}), dt);
         out.push_back(Sample{"halfway cases", {halves}, unary_fn(round_even), {AbstractValue{Shape{9}, dt}}});
         out.back().differentiable = false;  // steps there: finite differences see them
         return out;
       },
       float_only_bad("round_nearest_even", round_even)});
  auto numeric_bad = [](const std::string& name, Fn f) {
    return std::vector<BadInput>{bad<DTypeError>("bool operand", "[" + name + "] got an operand of type bool[2]",
                                                 [f] { f(zeros({2}, boolean)); }),
                                 bad<Error>("empty tensor handle", "[" + name + "]", [f] { f(Tensor()); })};
  };
  for (auto [name, f] : {std::pair<const char*, Fn>{"neg", lax::neg}, {"abs", lax::abs}, {"sign", lax::sign}})
    register_samples(name, {[f = f](DType dt) { return samples_for(f, dt, -5, 5, {i32, i64}); }, numeric_bad(name, f)});
  register_samples(
      "not", {[](DType) {
                return samples_for(lax::logical_not, boolean, 0, 1, {i32, i64});
              },
              {bad<DTypeError>("float operand", "[not] got an operand of type f32[3]",
                               [] { lax::logical_not(zeros({3}, f32)); }),
               bad<DTypeError>("f64 operand", "accepts bool, i32, i64", [] { lax::logical_not(zeros({}, f64)); })}});
  // stop_gradient's derivative is zero by definition, which finite differences cannot see.
  register_samples("stop_gradient",
                   {[](DType dt) {
                      auto out = samples_for(lax::stop_gradient, dt, -3, 3, {i32, boolean});
                      for (Sample& s : out) s.differentiable = false;
                      return out;
                    },
                    {bad<Error>("empty tensor handle", "[stop_gradient]", [] { lax::stop_gradient(Tensor()); }),
                     bad<ShapeError>("two operands", "[stop_gradient] takes 1 operand(s), got 2", [] {
                       fluxion::bind(*find_primitive("stop_gradient"), {zeros({2}), zeros({2})});
                     })}});
  return true;
}();

}  // namespace unary_samples
}  // namespace fluxion::testing
