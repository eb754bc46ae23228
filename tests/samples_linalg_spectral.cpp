// Samples of eigh and svd. Their derivatives are smooth only away from repeated eigenvalues and
// singular values, so every matrix is built with a chosen, well-separated spectrum: eigh's are
// H diag(d) H with a Householder reflection H and d spread 1.5 apart; svd's are H₁ [diag(s); 0] H₂
// with s spread 0.8 apart and at least 0.6. The vmap suite's scaled copies keep the gaps. Sizes:
// 1x1, square, tall, wide, one and two batch dims, size-0 matrices and batches. full_matrices
// samples with m != n are not finite-differenced (their extra columns are a convention, see
// include/fluxion/linalg_spectral.hpp; tests/test_linalg_spectral.cpp checks their span instead).
#include <sstream>

#include "primitives/linalg_spectral.hpp"
#include "samples.hpp"

namespace fluxion::testing {
namespace spectral_samples {

/// I - 2 h hᵀ / hᵀh for a random h (f64): an orthogonal, symmetric n x n matrix.
Tensor householder(int64_t n, uint64_t seed) {
  Tensor h = random_tensor({n}, f64, seed, -1.0, 1.0) + 0.1;
  return eye(n) - outer(h, h) * (2.0 / sum(h * h).item<double>());
}

/// A diagonal-like m x n matrix (f64) with `values` on its diagonal.
Tensor diagonal_matrix(int64_t m, int64_t n, const std::vector<double>& values) {
  std::vector<double> d(static_cast<size_t>(m * n), 0.0);
  for (size_t j = 0; j < values.size(); ++j) d[j * static_cast<size_t>(n) + j] = values[j];
  return from_vector(d, {m, n});
}

/// `batch` stacks of make(seed), as dtype dt with shape batch ++ (matrix shape).
template <class F> Tensor stacked(const Shape& batch, int64_t m, int64_t n, DType dt, uint64_t seed, F make) {
  int64_t count = 1;
  for (int64_t d : batch) count *= d;
  std::vector<int64_t> shape = batch.dims();
  shape.push_back(m);
  shape.push_back(n);
  if (count == 0) return zeros(Shape(shape), dt);
  std::vector<Tensor> parts;
  for (int64_t b = 0; b < count; ++b) parts.push_back(make(seed + 10 * static_cast<uint64_t>(b)));
  return astype(reshape(stack(parts, 0), shape), dt);
}

/// H diag(d) H with eigenvalues d_i = -2 + 1.5 i (plus a per-seed shift).
Tensor symmetric(int64_t n, uint64_t seed) {
  std::vector<double> d;
  for (int64_t i = 0; i < n; ++i)
    d.push_back(-2.0 + 1.5 * static_cast<double>(i) + 0.01 * static_cast<double>(seed % 7));
  Tensor h = householder(n, seed);
  return matmul(h, matmul(diagonal_matrix(n, n, d), h));
}

/// H₁ [diag(s); 0] H₂ with singular values 0.6 + 0.8 j (plus a per-seed shift).
Tensor rectangular(int64_t m, int64_t n, uint64_t seed) {
  std::vector<double> s;
  for (int64_t j = std::min(m, n); j-- > 0;)
    s.push_back(0.6 + 0.8 * static_cast<double>(j) + 0.01 * static_cast<double>(seed % 5));
  return matmul(householder(m, seed), matmul(diagonal_matrix(m, n, s), householder(n, seed + 1)));
}

Shape with_matrix(const Shape& batch, int64_t rows, int64_t cols) {
  Shape s = batch;
  s.push_back(rows);
  s.push_back(cols);
  return s;
}
Shape with_vector(const Shape& batch, int64_t len) {
  Shape s = batch;
  s.push_back(len);
  return s;
}

std::vector<Sample> eigh_samples(DType dt) {
  struct Case {
    const char* what;
    Shape batch;
    int64_t n;
  };
  // The composition-matrix checks use the first two.
  const std::vector<Case> cases{{"3x3", {}, 3},        {"batched 2x2", {2}, 2}, {"1x1", {}, 1},
                                {"5x5", {}, 5},        {"batched 4x4", {3}, 4}, {"two batch dims", {2, 2}, 3},
                                {"0x0 matrix", {}, 0}, {"size-0 batch", {0}, 3}};
  std::vector<Sample> out;
  uint64_t seed = 3100;
  for (const Case& c : cases) {
    Tensor a = stacked(c.batch, c.n, c.n, dt, seed += 100, [&](uint64_t s) { return symmetric(c.n, s); });
    std::ostringstream label;
    label << "eigh " << c.what << ": " << a.aval();
    out.push_back(Sample{label.str(),
                         {a},
                         [](const std::vector<Tensor>& in) {
                           auto [w, v] = linalg::eigh(in[0]);
                           return std::vector<Tensor>{w, v};
                         },
                         {AbstractValue{with_vector(c.batch, c.n), dt}, AbstractValue{a.shape(), dt}}});
  }
  return out;
}

std::vector<Sample> svd_samples(DType dt) {
  struct Case {
    const char* what;
    Shape batch;
    int64_t m, n;
    bool full, uv;
  };
  const std::vector<Case> cases{
      {"3x3", {}, 3, 3, false, true},
      {"batched tall 3x2", {2}, 3, 2, false, true},
      {"tall 4x2", {}, 4, 2, false, true},
      {"wide 2x4", {}, 2, 4, false, true},
      {"1x1", {}, 1, 1, false, true},
      {"row 1x3", {}, 1, 3, false, true},
      {"two batch dims, wide 2x3", {2, 2}, 2, 3, false, true},
      {"values only, tall 3x2", {}, 3, 2, false, false},
      {"values only, batched wide 2x3", {3}, 2, 3, false, false},
      {"full, square 3x3", {}, 3, 3, true, true},
      {"full, tall 4x2", {}, 4, 2, true, true},
      {"full, batched wide 2x3", {2}, 2, 3, true, true},
      {"0x3 matrix", {}, 0, 3, false, true},
      {"full, 2x0 matrix", {}, 2, 0, true, true},
      {"size-0 batch", {0}, 3, 2, false, true},
  };
  std::vector<Sample> out;
  uint64_t seed = 4100;
  for (const Case& c : cases) {
    Tensor a = stacked(c.batch, c.m, c.n, dt, seed += 100, [&](uint64_t s) { return rectangular(c.m, c.n, s); });
    const int64_t k = std::min(c.m, c.n);
    std::ostringstream label;
    label << "svd " << c.what << ": " << a.aval();
    const bool full = c.full, uv = c.uv;
    Sample s{label.str(),
             {a},
             [full, uv](const std::vector<Tensor>& in) {
               auto [u, sv, vt] = linalg::svd(in[0], full, uv);
               return uv ? std::vector<Tensor>{u, sv, vt} : std::vector<Tensor>{sv};
             },
             {}};
    const AbstractValue sv{with_vector(c.batch, k), dt};
    if (uv)
      s.expected = {AbstractValue{with_matrix(c.batch, c.m, full ? c.m : k), dt}, sv,
                    AbstractValue{with_matrix(c.batch, full ? c.n : k, c.n), dt}};
    else s.expected = {sv};
    // The extra columns of a full u (or rows of vt) are a basis convention, not a smooth function.
    s.differentiable = !(full && c.m != c.n && k > 0);
    out.push_back(s);
  }
  return out;
}

void bind_on(const char* primitive, const Tensor& a) { bind(*find_primitive(primitive), {a}); }

const bool registered_eigh = register_samples(
    "eigh", {eigh_samples,
             {bad<ShapeError>("not square", "[eigh] needs a square matrix or a batch of them (..., n, n), got f64[2,3]",
                              [] {
                                linalg::eigh(ones({2, 3}));
                              }),
              bad<ShapeError>("a vector", "[eigh] needs a square matrix or a batch of them (..., n, n), got f32[3]",
                              [] { linalg::eigh(ones({3}, f32)); }),
              bad<DTypeError>("integer operand of the primitive",
                              "[eigh] needs a floating matrix (f32 or f64), got i32[2,2]", [] {
                                bind_on("eigh", ones({2, 2}, i32));
                              })}});

const bool registered_svd = register_samples(
    "svd",
    {svd_samples,
     {bad<ShapeError>("a vector", "[svd] needs a matrix or a batch of them (..., m, n), got f64[4]",
                      [] { linalg::svd(ones({4})); }),
      bad<ShapeError>("a scalar", "[svd] needs a matrix or a batch of them (..., m, n), got f32[]",
                      [] { linalg::svdvals(ones({}, f32)); }),
      bad<DTypeError>(
          "integer operand of the primitive", "[svd] needs a floating matrix (f32 or f64), got i64[2,2]", [] {
            bind(*find_primitive("svd"), {ones({2, 2}, i64)}, primitives::spectral_detail::SvdParams(false, true));
          })}});

}  // namespace spectral_samples
}  // namespace fluxion::testing
