/// Accurate floating-point sums and products for the reduction kernels: f32 and f64 elements are
/// accumulated in double, pairwise over blocks. Error bounds (u = 2^-53, n elements): a block of
/// at most kBlock elements is split over kLanes lanes (at most kBlock / kLanes + log2 kLanes
/// roundings per element), blocks are combined pairwise (log2(n / kBlock) more), so a sum's error
/// is below (kBlock / kLanes + log2 kLanes + log2(n / kBlock)) u sum |x|, about 60 u for n = 10^9:
/// an f32 sum is then the correctly rounded sum but for a few ties, an f64 sum a few ulp of sum |x|
/// (sequential accumulation: n u). Products likewise, in relative terms. Vectorised converts and
/// adds: memory-bound sums cost what a plain f32 sum does.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace fluxion::cpu::accumulate {

/// Elements reduced sequentially in lanes before blocks are combined pairwise.
inline constexpr int64_t kBlock = 256;
/// Rows of a column reduction added sequentially before row blocks are combined pairwise.
inline constexpr int64_t kRowBlock = 64;

/// f-reduction of p[0, n) into `init` in L double lanes combined pairwise at the end: the inner
/// loop is L / (packet size) independent chains of vector converts and adds.
template <int L, class T, class F>
double lanes(const T* p, int64_t n, F f, double init) {
  double s[L];
  std::fill(s, s + L, init);
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) s[j] = f(s[j], static_cast<double>(p[i + j]));
  for (int j = 0; i < n; ++i, ++j) s[j] = f(s[j], static_cast<double>(p[i]));
  for (int width = L / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j) s[j] = f(s[j], s[j + width]);
  return s[0];
}

/// f-reduction of p[0, n) (f associative in exact arithmetic: + or *; `init` its identity), in
/// double, pairwise over blocks of kBlock. Short runs (rows of a few elements) take one chain.
template <class T, class F>
double pairwise(const T* p, int64_t n, F f, double init) {
  if (n < 16) {
    double s = init;
    for (int64_t i = 0; i < n; ++i) s = f(s, static_cast<double>(p[i]));
    return s;
  }
  if (n < 128) return lanes<4>(p, n, f, init);
  if (n <= kBlock) return lanes<16>(p, n, f, init);
  const int64_t half = std::max(kBlock, n / 2 / kBlock * kBlock);  // whole blocks first
  return f(pairwise(p, half, f, init), pairwise(p + half, n - half, f, init));
}

namespace detail {
/// out[0, w) = f-reduction over rows [0, rows) of the row-major rows at `in` (row stride
/// `stride`), pairwise over blocks of kRowBlock rows; `deeper` holds w doubles per level below.
template <class T, class F>
void columns(const T* in, int64_t rows, int64_t stride, int64_t w, F f, double* out, double* deeper) {
  if (rows <= kRowBlock) {
    for (int64_t c = 0; c < w; ++c) out[c] = static_cast<double>(in[c]);
    for (int64_t r = 1; r < rows; ++r) {
      const T* row = in + r * stride;
      for (int64_t c = 0; c < w; ++c) out[c] = f(out[c], static_cast<double>(row[c]));
    }
    return;
  }
  const int64_t half = rows / 2;
  columns(in, half, stride, w, f, out, deeper + w);
  columns(in + half * stride, rows - half, stride, w, f, deeper, deeper + w);
  for (int64_t c = 0; c < w; ++c) out[c] = f(out[c], deeper[c]);
}
}  // namespace detail

/// out[c] = f-reduction over r of in[r, c] for a row-major [rows, cols] block (rows >= 1), in
/// double, pairwise over row blocks; each result rounded to T once. Columns are taken in chunks
/// whose accumulators stay in L1.
template <class T, class F>
void column_reduce(const T* in, int64_t rows, int64_t cols, T* out, F f) {
  constexpr int64_t kChunk = 1024;
  int depth = 1;
  for (int64_t r = rows; r > kRowBlock; r = r - r / 2) ++depth;
  const int64_t w_max = std::min(kChunk, cols);
  std::vector<double> acc(static_cast<size_t>(w_max * (depth + 1)));
  for (int64_t c0 = 0; c0 < cols; c0 += kChunk) {
    const int64_t w = std::min(kChunk, cols - c0);
    detail::columns(in + c0, rows, cols, w, f, acc.data(), acc.data() + w);
    for (int64_t c = 0; c < w; ++c) out[c0 + c] = static_cast<T>(acc[static_cast<size_t>(c)]);
  }
}

}  // namespace fluxion::cpu::accumulate
