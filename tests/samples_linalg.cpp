// Samples of linalg_solve: n = 1, 3, 5 with k = 1, 2 right-hand sides, unbatched and with one or two
// batch dims, plus size-0 n, k and batch dims. The matrices are random in [-1, 1) plus (n + 1) I:
// strictly diagonally dominant, so well conditioned, which the finite-difference checks of the rule
// suite need (and the vmap suite's scaled copies stay so).
#include <sstream>

#include "samples.hpp"

namespace fluxion::testing {
namespace linalg_samples {

struct Case {
  const char* what;
  Shape batch;
  int64_t n, k;
};

const std::vector<Case>& cases() {
  // Composition-matrix checks use the first two, so they are the small, typical ones.
  static const std::vector<Case> c{
      {"3x3, one column", {}, 3, 1},
      {"batched 3x3, two columns", {2}, 3, 2},
      {"1x1, one column", {}, 1, 1},
      {"1x1, two columns", {}, 1, 2},
      {"3x3, two columns", {}, 3, 2},
      {"5x5, one column", {}, 5, 1},
      {"5x5, two columns", {}, 5, 2},
      {"batched 1x1", {3}, 1, 1},
      {"batched 3x3, one column", {2}, 3, 1},
      {"batched 5x5, two columns", {3}, 5, 2},
      {"two batch dims", {2, 2}, 3, 2},
      {"no columns", {}, 3, 0},
      {"0x0 matrix", {}, 0, 2},
      {"size-0 batch", {0}, 3, 2},
  };
  return c;
}

Shape with_matrix(const Shape& batch, int64_t rows, int64_t cols) {
  Shape s = batch;
  s.push_back(rows);
  s.push_back(cols);
  return s;
}

/// Random (batch..., n, n) in [-1, 1) plus (n + 1) times the identity, in dtype dt.
Tensor well_conditioned(const Shape& batch, int64_t n, DType dt, uint64_t seed) {
  Tensor r = random_tensor(with_matrix(batch, n, n), dt, seed, -1.0, 1.0);
  return r + eye(n, dt) * static_cast<double>(n + 1);
}

std::vector<Sample> samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 900;
  for (const Case& c : cases()) {
    Tensor a = well_conditioned(c.batch, c.n, dt, seed++);
    Tensor b = random_tensor(with_matrix(c.batch, c.n, c.k), dt, seed++);
    std::ostringstream label;
    label << c.what << ": " << a.aval() << " \\ " << b.aval();
    out.push_back(Sample{label.str(),
                         {a, b},
                         binary_fn([](const Tensor& x, const Tensor& y) { return lax::linalg_solve(x, y); }),
                         {AbstractValue{with_matrix(c.batch, c.n, c.k), dt}}});
  }
  return out;
}

void solve(const Shape& a, DType ad, const Shape& b, DType bd) { lax::linalg_solve(ones(a, ad), ones(b, bd)); }

const bool registered = register_samples(
    "linalg_solve",
    {samples,
     {bad<ShapeError>("a not square",
                      "[linalg_solve] a must be a square matrix or a batch of them (..., n, n), got f64[3,4]",
                      [] {
                        solve({3, 4}, f64, {3, 1}, f64);
                      }),
      bad<ShapeError>("a is a vector",
                      "[linalg_solve] a must be a square matrix or a batch of them (..., n, n), got f32[3]",
                      [] { solve({3}, f32, {3}, f32); }),
      bad<ShapeError>("b rows differ", "[linalg_solve] b f64[4,2] has 4 rows but a f64[3,3] is 3x3",
                      [] {
                        solve({3, 3}, f64, {4, 2}, f64);
                      }),
      bad<ShapeError>("b is a vector", "[linalg_solve] b f64[3] must have the rank of a f64[3,3] (2)",
                      [] {
                        solve({3, 3}, f64, {3}, f64);
                      }),
      bad<ShapeError>("batch dims differ",
                      "[linalg_solve] batch dims of a f32[2,3,3] and b f32[4,3,1] differ (dim 0: 2 vs 4)",
                      [] {
                        solve({2, 3, 3}, f32, {4, 3, 1}, f32);
                      }),
      bad<DTypeError>("integer operands", "[linalg_solve] needs floating operands (f32 or f64), got a i32[2,2]",
                      [] {
                        solve({2, 2}, i32, {2, 1}, i32);
                      }),
      bad<DTypeError>("dtypes differ", "[linalg_solve] operand dtypes differ: a f32[2,2] and b f64[2,1]",
                      [] {
                        solve({2, 2}, f32, {2, 1}, f64);
                      }),
      bad<Error>("singular matrix", "[linalg_solve] the matrix f64[2,2] is singular", [] {
        lax::linalg_solve(from_vector(std::vector<double>{1, 2, 2, 4}, {2, 2}), ones({2, 1}));
      })}});

}  // namespace linalg_samples
}  // namespace fluxion::testing
