// Samples of cholesky and triangular_solve.
// cholesky: B Bᵀ + n I for B random in [-1, 1) (well conditioned, and the vmap suite's positively
// scaled copies stay positive definite), n = 1, 2, 3, 5, batched, two batch dims, size-0 n and batch,
// a non-symmetric input (its symmetric part is factored: the finite-difference checks perturb every
// entry independently, and the derivative is that of the symmetrized function), and the NaN mode on
// a batch holding one indefinite matrix.
// triangular_solve: every combination of left_side, lower, transpose_a, unit_diagonal on a 3x3, then
// batched, two batch dims, 1x1, no right-hand sides, 0x0, size-0 batch. The matrices are random in
// [-1, 1) in both triangles (the unread one must not matter) plus (n + 1) I: a strong diagonal.
#include <cmath>
#include <sstream>

#include "samples.hpp"

namespace fluxion::testing {
namespace triangular_samples {

Shape with_matrix(const Shape& batch, int64_t rows, int64_t cols) {
  Shape s = batch;
  s.push_back(rows);
  s.push_back(cols);
  return s;
}

/// x with its last two axes swapped.
Tensor swap_last(const Tensor& x) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.ndim(); ++i) perm.push_back(i);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return transpose(x, perm);
}

/// B Bᵀ + n I per matrix, B random (batch..., n, n) in [-1, 1).
Tensor spd(const Shape& batch, int64_t n, DType dt, uint64_t seed) {
  Tensor b = random_tensor(with_matrix(batch, n, n), dt, seed, -1.0, 1.0);
  return matmul(b, swap_last(b)) + eye(n, dt) * static_cast<double>(n);
}

std::vector<Sample> cholesky_samples(DType dt) {
  struct Case {
    const char* what;
    Shape batch;
    int64_t n;
  };
  const std::vector<Case> cases{
      {"3x3", {}, 3},          {"batched 2x2", {3}, 2},       {"1x1", {}, 1}, {"5x5", {}, 5},
      {"batched 3x3", {2}, 3}, {"two batch dims", {2, 2}, 2}, {"0x0", {}, 0}, {"size-0 batch", {0}, 3},
  };
  auto chol = unary_fn([](const Tensor& a) { return linalg::cholesky(a); });
  std::vector<Sample> out;
  uint64_t seed = 3100;
  for (const Case& c : cases) {
    Tensor a = spd(c.batch, c.n, dt, seed++);
    out.push_back(Sample{std::string(c.what) + " SPD", {a}, chol, {a.aval()}});
  }
  Tensor skew = random_tensor({4, 4}, dt, seed++, -0.5, 0.5);
  Tensor nonsym = spd({}, 4, dt, seed++) + skew - swap_last(skew) * 0.5;
  out.push_back(Sample{"non-symmetric 4x4 (factors its symmetric part)", {nonsym}, chol, {nonsym.aval()}});
  // Matrix 1 has eigenvalues 3 and -1: its factor is NaNs, matrix 0's is computed.
  Tensor mixed = stack({spd({}, 2, dt, seed++), astype(from_vector(std::vector<double>{1, 2, 2, 1}, {2, 2}), dt)}, 0);
  out.push_back(Sample{"NaN mode, batch with one indefinite matrix",
                       {mixed},
                       unary_fn([](const Tensor& a) { return linalg::cholesky(a, linalg::OnFailure::nan); }),
                       {mixed.aval()}});
  return out;
}

/// Random (batch..., n, n) in [-1, 1) plus (n + 1) I: both triangles filled, a strong diagonal.
Tensor triangular(const Shape& batch, int64_t n, DType dt, uint64_t seed) {
  return random_tensor(with_matrix(batch, n, n), dt, seed, -1.0, 1.0) + eye(n, dt) * static_cast<double>(n + 1);
}

Sample solve_sample(const std::string& what, const Shape& batch, int64_t n, int64_t k, bool left, bool lower,
                    bool trans, bool unit, DType dt, uint64_t seed) {
  Tensor a = triangular(batch, n, dt, seed);
  Tensor b = random_tensor(left ? with_matrix(batch, n, k) : with_matrix(batch, k, n), dt, seed + 1);
  std::ostringstream label;
  label << what << " left_side=" << left << " lower=" << lower << " transpose_a=" << trans << " unit=" << unit << ": "
        << a.aval() << ", " << b.aval();
  return Sample{label.str(),
                {a, b},
                binary_fn([=](const Tensor& x, const Tensor& y) {
                  return linalg::triangular_solve(x, y, left, lower, trans, unit);
                }),
                {b.aval()}};
}

std::vector<Sample> triangular_solve_samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 3200;
  // The composition-matrix checks use the first two: the common lower left solve, and its transpose.
  for (bool trans : {false, true})
    for (bool lower : {true, false})
      for (bool left : {true, false})
        for (bool unit : {false, true})
          out.push_back(solve_sample("3x3", {}, 3, 2, left, lower, trans, unit, dt, seed += 2));
  out.push_back(solve_sample("batched 4x4", {2}, 4, 1, true, true, false, false, dt, seed += 2));
  out.push_back(solve_sample("batched 3x3", {3}, 3, 2, false, false, true, false, dt, seed += 2));
  out.push_back(solve_sample("two batch dims", {2, 2}, 2, 2, true, false, false, true, dt, seed += 2));
  out.push_back(solve_sample("1x1", {}, 1, 3, false, true, false, false, dt, seed += 2));
  out.push_back(solve_sample("no right-hand sides", {}, 3, 0, true, true, true, false, dt, seed += 2));
  out.push_back(solve_sample("0x0", {}, 0, 2, true, true, false, false, dt, seed += 2));
  out.push_back(solve_sample("size-0 batch", {0}, 3, 2, false, true, false, false, dt, seed += 2));
  return out;
}

void chol(const Shape& a, DType dt) { linalg::cholesky(ones(a, dt)); }
void tri(const Shape& a, DType ad, const Shape& b, DType bd, bool left = true) {
  linalg::triangular_solve(ones(a, ad), ones(b, bd), left);
}

const bool registered_cholesky = register_samples(
    "cholesky",
    {cholesky_samples,
     {bad<ShapeError>("a not square",
                      "[cholesky] a must be a square matrix or a batch of them (..., n, n), got f64[3,4]",
                      [] {
                        chol({3, 4}, f64);
                      }),
      bad<ShapeError>("a is a vector",
                      "[cholesky] a must be a square matrix or a batch of them (..., n, n), got f32[3]",
                      [] { chol({3}, f32); }),
      bad<DTypeError>("integer matrix", "[cholesky] needs a floating matrix (f32 or f64), got i32[2,2]",
                      [] {
                        chol({2, 2}, i32);
                      }),
      bad<Error>("not positive definite", "[cholesky] the matrix f64[2,2] is not positive definite",
                 [] {
                   linalg::cholesky(from_vector(std::vector<double>{1, 2, 2, 1}, {2, 2}));
                 }),
      bad<Error>("not positive definite in a batch",
                 "[cholesky] the matrix at batch index 1 of f64[3,2,2] is not positive definite",
                 [] {
                   linalg::cholesky(from_vector(std::vector<double>{2, 0, 0, 2, 1, 0, 0, -1, 1, 0, 0, 1}, {3, 2, 2}));
                 }),
      bad<Error>("NaN input", "[cholesky] the matrix at batch index (0,1) of f32[1,2,1,1] is not positive definite",
                 [] {
                   linalg::cholesky(from_vector(std::vector<float>{1, NAN}, {1, 2, 1, 1}));
                 })}});

const bool registered_triangular_solve = register_samples(
    "triangular_solve",
    {triangular_solve_samples,
     {bad<ShapeError>("a not square",
                      "[triangular_solve] a must be a square matrix or a batch of them (..., n, n), got f64[3,4]",
                      [] {
                        tri({3, 4}, f64, {3, 1}, f64);
                      }),
      bad<ShapeError>("b rank differs", "[triangular_solve] b f64[3] must have the rank of a f64[3,3] (2)",
                      [] {
                        tri({3, 3}, f64, {3}, f64);
                      }),
      bad<ShapeError>("batch dims differ",
                      "[triangular_solve] batch dims of a f32[2,3,3] and b f32[4,3,1] differ (dim 0: 2 vs 4)",
                      [] {
                        tri({2, 3, 3}, f32, {4, 3, 1}, f32);
                      }),
      bad<ShapeError>("b rows differ (left side)",
                      "[triangular_solve] b f64[4,2] must be (..., n, k) (left_side: op(a) x = b) with n = 3 for a "
                      "f64[3,3], but its rows are 4",
                      [] {
                        tri({3, 3}, f64, {4, 2}, f64);
                      }),
      bad<ShapeError>("b columns differ (right side)",
                      "[triangular_solve] b f64[3,2] must be (..., k, n) (x op(a) = b) with n = 3 for a f64[3,3], "
                      "but its columns are 2",
                      [] {
                        tri({3, 3}, f64, {3, 2}, f64, false);
                      }),
      bad<DTypeError>("integer operands", "[triangular_solve] needs floating operands (f32 or f64), got a i32[2,2]",
                      [] {
                        tri({2, 2}, i32, {2, 1}, i32);
                      }),
      bad<DTypeError>("dtypes differ", "[triangular_solve] operand dtypes differ: a f32[2,2] and b f64[2,1]",
                      [] {
                        tri({2, 2}, f32, {2, 1}, f64);
                      }),
      bad<Error>("zero on the diagonal in a batch",
                 "[triangular_solve] the matrix at batch index 1 of f64[2,2,2] has a zero on its diagonal (row 1)", [] {
                   linalg::triangular_solve(from_vector(std::vector<double>{1, 0, 1, 1, 1, 0, 1, 0}, {2, 2, 2}),
                                            ones({2, 2, 1}));
                 })}});

}  // namespace triangular_samples
}  // namespace fluxion::testing
