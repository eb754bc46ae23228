// Samples of lu, qr, expm and expm_frechet. Finite differences need factors that are smooth near
// the sample, so every matrix is well separated: lu's are column diagonally dominant matrices with
// their rows reversed (partial pivoting must undo the reversal, and every pivot beats the other
// candidates by a wide margin); qr's are diagonally dominant (each reflector's leading entry stays
// far from 0, where its sign convention jumps); expm's have modest norms. The values are drawn in f64
// and rounded to the sample's dtype, so the f32 and f64 samples are the same matrices.
#include <sstream>

#include "samples.hpp"

namespace fluxion::testing {
namespace decomp_samples {

Shape with_matrix(const Shape& batch, int64_t rows, int64_t cols) {
  Shape s = batch;
  s.push_back(rows);
  s.push_back(cols);
  return s;
}

/// Random (batch..., m, n) in [-1, 1) plus (m + 1) on the main diagonal, rows optionally reversed.
Tensor dominant(const Shape& batch, int64_t m, int64_t n, DType dt, uint64_t seed, bool reverse_rows) {
  const Shape shape = with_matrix(batch, m, n);
  std::vector<double> v = random_tensor(shape, f64, seed, -1.0, 1.0).to_vector<double>();
  const int64_t count = m * n == 0 ? 0 : static_cast<int64_t>(v.size()) / (m * n);
  std::vector<double> out(v.size());
  for (int64_t b = 0; b < count; ++b)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const int64_t row = reverse_rows ? m - 1 - i : i;
        out[static_cast<size_t>((b * m + row) * n + j)] =
            v[static_cast<size_t>((b * m + i) * n + j)] + (i == j ? static_cast<double>(m + 1) : 0.0);
      }
  return astype(from_vector(out, shape), dt);
}

struct Case {
  const char* what;
  Shape batch;
  int64_t m, n;
  bool full = false;  // qr only
};

std::string label(const char* what, const Tensor& a) {
  std::ostringstream os;
  os << what << ": " << a.aval();
  return os.str();
}

// ---- lu ----

std::vector<Sample> lu_samples(DType dt) {
  static const std::vector<Case> cases{
      {"3x3", {}, 3, 3},      {"batched 3x3", {2}, 3, 3}, {"tall 4x3", {}, 4, 3},
      {"wide 3x5", {}, 3, 5}, {"1x1", {}, 1, 1},          {"two batch dims", {2, 2}, 2, 2},
      {"0x0", {}, 0, 0},      {"3x0", {}, 3, 0},          {"size-0 batch", {0}, 3, 3},
  };
  std::vector<Sample> out;
  uint64_t seed = 3100;
  for (const Case& c : cases) {
    Tensor a = dominant(c.batch, c.m, c.n, dt, seed++, true);
    Shape batch_k = c.batch, batch_m = c.batch;
    batch_k.push_back(std::min(c.m, c.n));
    batch_m.push_back(c.m);
    out.push_back(Sample{label(c.what, a),
                         {a},
                         [](const std::vector<Tensor>& in) {
                           auto [lu, pivots, perm] = lax::lu(in[0]);
                           return std::vector<Tensor>{lu, pivots, perm};
                         },
                         {a.aval(), AbstractValue{batch_k, i32}, AbstractValue{batch_m, i32}}});
  }
  return out;
}

// ---- qr ----

std::vector<Sample> qr_samples(DType dt) {
  static const std::vector<Case> cases{
      {"reduced 3x3", {}, 3, 3},
      {"reduced tall 4x2", {}, 4, 2},
      {"wide 2x4", {}, 2, 4},
      {"batched reduced 3x2", {2}, 3, 2},
      {"complete 3x3", {}, 3, 3, true},
      {"complete tall 4x2 (no derivative)", {}, 4, 2, true},
      {"complete wide 2x3", {}, 2, 3, true},
      {"1x1", {}, 1, 1},
      {"0x3", {}, 0, 3},
      {"complete 3x0", {}, 3, 0, true},
      {"size-0 batch", {0}, 3, 2},
  };
  std::vector<Sample> out;
  uint64_t seed = 3200;
  for (const Case& c : cases) {
    Tensor a = dominant(c.batch, c.m, c.n, dt, seed++, false);
    const int64_t cols = c.full ? c.m : std::min(c.m, c.n);
    const bool full = c.full;
    Sample s{label(c.what, a),
             {a},
             [full](const std::vector<Tensor>& in) {
               auto [q, r] = lax::qr(in[0], full);
               return std::vector<Tensor>{q, r};
             },
             {AbstractValue{with_matrix(c.batch, c.m, cols), dt}, AbstractValue{with_matrix(c.batch, cols, c.n), dt}}};
    // A complete QR of a tall matrix has no derivative (its jvp raises NotImplementedError).
    s.differentiable = !(c.full && c.m > c.n);
    out.push_back(std::move(s));
  }
  return out;
}

// ---- expm, expm_frechet ----

const std::vector<Case>& expm_cases() {
  static const std::vector<Case> cases{
      {"2x2", {}, 2, 2}, {"batched 3x3", {2}, 3, 3}, {"1x1", {}, 1, 1},
      {"4x4", {}, 4, 4}, {"0x0", {}, 0, 0},          {"size-0 batch", {0}, 2, 2},
  };
  return cases;
}

std::vector<Sample> expm_samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 3300;
  for (const Case& c : expm_cases()) {
    Tensor a = random_tensor(with_matrix(c.batch, c.m, c.n), dt, seed++, -0.8, 0.8);
    out.push_back(Sample{label(c.what, a), {a}, unary_fn([](const Tensor& x) { return lax::expm(x); }), {a.aval()}});
  }
  return out;
}

std::vector<Sample> frechet_samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 3400;
  for (const Case& c : expm_cases()) {
    if (c.m == 4) continue;  // its derivatives take 16x16 exponentials: the small cases suffice
    Tensor a = random_tensor(with_matrix(c.batch, c.m, c.n), dt, seed++, -0.8, 0.8);
    Tensor e = random_tensor(with_matrix(c.batch, c.m, c.n), dt, seed++, -1.0, 1.0);
    out.push_back(Sample{label(c.what, a),
                         {a, e},
                         binary_fn([](const Tensor& x, const Tensor& y) { return lax::expm_frechet(x, y); }),
                         {a.aval()}});
  }
  return out;
}

const bool registered = [] {
  register_samples(
      "lu", {lu_samples,
             {bad<DTypeError>("integer operand", "[lu] needs a floating operand (f32 or f64), got i32[2,2]",
                              [] {
                                lax::lu(ones({2, 2}, i32));
                              }),
              bad<ShapeError>("a vector", "[lu] needs a matrix or a batch of them (..., m, n), got f64[3] of rank 1",
                              [] { lax::lu(ones({3}, f64)); }),
              bad<ShapeError>("det of a non-square matrix", "[det] needs a square matrix or a stack of them",
                              [] {
                                linalg::det(ones({2, 3}, f64));
                              }),
              bad<ShapeError>("slogdet of a scalar", "[slogdet] needs a square matrix or a stack of them",
                              [] { linalg::slogdet(ones({}, f32)); }),
              bad<ShapeError>("matrix_power of a non-square matrix",
                              "[matrix_power] needs a square matrix or a stack of them (..., n, n), got f64[3,2]", [] {
                                linalg::matrix_power(ones({3, 2}, f64), 2);
                              })}});
  register_samples(
      "qr",
      {qr_samples,
       {bad<ShapeError>("a scalar", "[qr] needs a matrix or a batch of them (..., m, n), got f32[] of rank 0",
                        [] { lax::qr(ones({}, f32)); }),
        bad<DTypeError>("integer operand", "[qr] needs a floating operand (f32 or f64), got i64[3,2]",
                        [] {
                          lax::qr(ones({3, 2}, i64), true);
                        }),
        bad<NotImplementedError>(
            "derivative of a complete tall QR",
            "[qr] the derivative of a complete QR (full_matrices=true) of the tall f64[3,2]", [] {
              fluxion::grad([](const Tensor& x) { return sum(std::get<0>(lax::qr(x, true))); })(ones({3, 2}, f64));
            })}});
  register_samples("expm",
                   {expm_samples,
                    {bad<ShapeError>("non-square", "[expm] needs square matrices (..., n, n), got f64[2,3] (2x3)",
                                     [] {
                                       lax::expm(ones({2, 3}, f64));
                                     }),
                     bad<DTypeError>("integer operand", "[expm] needs a floating operand (f32 or f64), got i32[2,2]",
                                     [] {
                                       lax::expm(ones({2, 2}, i32));
                                     }),
                     bad<ShapeError>("fx::linalg::expm of a vector", "[expm] needs a square matrix or a stack of them",
                                     [] { linalg::expm(ones({4}, f64)); })}});
  register_samples(
      "expm_frechet",
      {frechet_samples,
       {bad<ShapeError>("direction of another shape",
                        "[expm_frechet] a f64[2,2] and the direction e f64[3,3] must have the same shape and dtype",
                        [] {
                          lax::expm_frechet(ones({2, 2}, f64), ones({3, 3}, f64));
                        }),
        bad<ShapeError>("non-square", "[expm_frechet] needs square matrices (..., n, n), got f32[2,1] (2x1)", [] {
          lax::expm_frechet(ones({2, 1}, f32), ones({2, 1}, f32));
        })}});
  return true;
}();

}  // namespace decomp_samples
}  // namespace fluxion::testing
