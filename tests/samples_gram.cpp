// Samples of gram (xᵀ diag(s) x): tall, wide, 1x1, one column, one row and square x with random
// values and weights in [-2, 2) (so negative weights too), two long contractions (N = 70, 300) on
// a 1/16 grid, whose products and sums are exact in f32 and f64 in any order, and size-0 N and D.
#include <cmath>
#include <sstream>

#include "samples.hpp"

namespace fluxion::testing {
namespace gram_samples {

struct Case {
  const char* what;
  int64_t n, d;
  bool grid;  // values on a 1/16 grid (long contractions)
};

const std::vector<Case>& cases() {
  // Composition-matrix checks use the first two, so they are the small, typical ones.
  static const std::vector<Case> c{
      {"tall", 5, 3, false},    {"wide", 3, 5, false},       {"1x1", 1, 1, false},          {"one column", 4, 1, false},
      {"one row", 1, 4, false}, {"square", 7, 7, false},     {"long, odd D", 70, 33, true}, {"long", 300, 20, true},
      {"no rows", 0, 3, false}, {"no columns", 4, 0, false},
  };
  return c;
}

std::vector<Sample> samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 950;
  for (const Case& c : cases()) {
    const Shape xs{c.n, c.d}, ss{c.n};
    Tensor x = c.grid ? grid_tensor(xs, dt, seed) : random_tensor(xs, dt, seed);
    Tensor s = c.grid ? grid_tensor(ss, dt, seed + 1) : random_tensor(ss, dt, seed + 1);
    seed += 2;
    std::ostringstream label;
    label << c.what << ": gram " << x.aval() << " " << s.aval();
    out.push_back(Sample{label.str(),
                         {x, s},
                         binary_fn([](const Tensor& a, const Tensor& w) { return lax::gram(a, w); }),
                         {AbstractValue{Shape{c.d, c.d}, dt}}});
  }
  return out;
}

void gram(const Shape& x, DType xd, const Shape& s, DType sd) { lax::gram(ones(x, xd), ones(s, sd)); }

const bool registered = register_samples(
    "gram",
    {samples,
     {bad<ShapeError>("x is a vector", "[gram] x must be a matrix [N, D], got f64[3]",
                      [] { gram({3}, f64, {3}, f64); }),
      bad<ShapeError>("x has rank 3", "[gram] x must be a matrix [N, D], got f32[2,3,4]",
                      [] {
                        gram({2, 3, 4}, f32, {2}, f32);
                      }),
      bad<ShapeError>("s is a matrix", "[gram] s must be a vector [N], got f64[3,1]",
                      [] {
                        gram({3, 2}, f64, {3, 1}, f64);
                      }),
      bad<ShapeError>("s length differs", "[gram] s f32[4] has 4 elements but x f32[3,2] has 3 rows",
                      [] {
                        gram({3, 2}, f32, {4}, f32);
                      }),
      bad<DTypeError>("integer operands", "[gram] needs floating operands (f32 or f64), got x i32[3,2] and s i32[3]",
                      [] {
                        gram({3, 2}, i32, {3}, i32);
                      }),
      bad<DTypeError>("dtypes differ", "[gram] operand dtypes differ: x f32[3,2] and s f64[3]", [] {
        gram({3, 2}, f32, {3}, f64);
      })}});

}  // namespace gram_samples
}  // namespace fluxion::testing
