/// Accurate floating-point sums and products for the reduction kernels: f32 and f64 elements are
/// accumulated in double, pairwise over blocks. Op (a sum or a product) provides
///   template <class V> static V combine(V a, V b);   // a + b or a * b, in double
///   template <class V> static V identity();
///
/// Error bounds (u = 2^-53, n elements): a block of at most kBlock elements is split over 16
/// lanes (at most kBlock / 16 + 4 roundings per element) and blocks are combined pairwise
/// (log2(n / kBlock) more), so a sum's error is below (kBlock / 16 + 4 + log2(n / kBlock)) u sum |x|:
/// for 10^7 elements 272 u sum |x| at worst (sequential accumulation: 10^7 u), in practice a few
/// ulp of an f64 sum, and far below an f32 ulp: an f32 sum is its correctly rounded value but
/// for ties. Column reductions: kRowBlock + log2(rows / kRowBlock) roundings. Products likewise,
/// in relative terms. Blocks are long so that the per-block work (combining 16 lanes, a call)
/// stays a few percent: with 256-element blocks sums were 3x slower than Eigen's. The price is
/// the float-to-double converts of f32 sums: 1.4-2x an f32 Eigen sum here, in cache or not.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace fluxion::cpu::accumulate {

/// Elements reduced sequentially in lanes before blocks are combined pairwise.
inline constexpr int64_t kBlock = 4096;
/// Rows of a column reduction added sequentially before row blocks are combined pairwise.
inline constexpr int64_t kRowBlock = 128;

/// The value an accumulation starts from: Op's identity, but -0 for a sum (IEEE addition's
/// identity: -0 + x is x for every x, -0 included), so that a sum of -0 values is -0, as when
/// the elements are added to each other (and as jit's fused sums give). A reduction of zero
/// elements is Op::identity instead (+0 for a sum, numpy's result): reduction.hpp fills it.
template <class Op> double start() {
  const double identity = Op::template identity<double>();
  return identity == 0.0 ? -0.0 : identity;
}

/// The Op-reduction of p[0, n) from `init` in L double lanes combined pairwise at the end: the
/// inner loop is L / (packet size) independent chains of vector converts and adds.
template <class Op, int L, class T> double lanes(const T* p, int64_t n, double init) {
  double s[L];
  std::fill(s, s + L, init);
  int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) s[j] = Op::combine(s[j], static_cast<double>(p[i + j]));
  double tail = init;  // its own variable: indexing s by a variable would keep s out of registers
  for (; i < n; ++i) tail = Op::combine(tail, static_cast<double>(p[i]));
  for (int width = L / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j) s[j] = Op::combine(s[j], s[j + width]);
  return Op::combine(s[0], tail);
}

/// The Op-reduction of p[0, n) in double, pairwise over blocks of kBlock elements. Short runs
/// (rows of a few elements) take two chains.
template <class Op, class T> double pairwise(const T* p, int64_t n) {
  const double init = start<Op>();
  if (n < 16) {
    double s0 = init, s1 = init;
    int64_t i = 0;
    for (; i + 2 <= n; i += 2) {
      s0 = Op::combine(s0, static_cast<double>(p[i]));
      s1 = Op::combine(s1, static_cast<double>(p[i + 1]));
    }
    if (i < n) s0 = Op::combine(s0, static_cast<double>(p[i]));
    return Op::combine(s0, s1);
  }
  if (n < 128) return lanes<Op, 4>(p, n, init);
  if (n <= kBlock) return lanes<Op, 16>(p, n, init);
  const int64_t half = std::max(kBlock, n / 2 / kBlock * kBlock);  // whole blocks first
  return Op::combine(pairwise<Op>(p, half), pairwise<Op>(p + half, n - half));
}

namespace detail {
/// out[0, w) = the Op-reduction over rows [0, rows) of the rows at `in` (row stride `stride`),
/// pairwise over blocks of kRowBlock rows; `deeper` holds w doubles per level below this one.
/// Within a block the rows stream through in order, four per pass over the accumulators (one
/// load and store of them per four rows; the additions stay in row order).
template <class Op, class T>
void columns(const T* in, int64_t rows, int64_t stride, int64_t w, double* out, double* deeper) {
  if (rows <= kRowBlock) {
    for (int64_t c = 0; c < w; ++c) out[c] = static_cast<double>(in[c]);
    int64_t r = 1;
    for (; r + 4 <= rows; r += 4) {
      const T *r0 = in + r * stride, *r1 = r0 + stride, *r2 = r1 + stride, *r3 = r2 + stride;
      for (int64_t c = 0; c < w; ++c) {
        double a = Op::combine(out[c], static_cast<double>(r0[c]));
        a = Op::combine(a, static_cast<double>(r1[c]));
        a = Op::combine(a, static_cast<double>(r2[c]));
        out[c] = Op::combine(a, static_cast<double>(r3[c]));
      }
    }
    for (; r < rows; ++r) {
      const T* row = in + r * stride;
      for (int64_t c = 0; c < w; ++c) out[c] = Op::combine(out[c], static_cast<double>(row[c]));
    }
    return;
  }
  const int64_t half = rows / 2;
  columns<Op>(in, half, stride, w, out, deeper + w);
  columns<Op>(in + half * stride, rows - half, stride, w, deeper, deeper + w);
  for (int64_t c = 0; c < w; ++c) out[c] = Op::combine(out[c], deeper[c]);
}
}  // namespace detail

/// out[c] = the Op-reduction over r of in[r, c] for a row-major [rows, cols] block (rows >= 1),
/// in double, pairwise over row blocks, each result rounded to T once. Columns are taken in
/// chunks whose accumulators stay in L1.
template <class Op, class T> void column_reduce(const T* in, int64_t rows, int64_t cols, T* out) {
  constexpr int64_t kChunk = 1024;
  int depth = 1;
  for (int64_t r = rows; r > kRowBlock; r = r - r / 2) ++depth;
  const int64_t w_max = std::min(kChunk, cols);
  std::vector<double> acc(static_cast<size_t>(w_max * (depth + 1)));
  for (int64_t c0 = 0; c0 < cols; c0 += kChunk) {
    const int64_t w = std::min(kChunk, cols - c0);
    detail::columns<Op>(in + c0, rows, cols, w, acc.data(), acc.data() + w);
    for (int64_t c = 0; c < w; ++c) out[c0 + c] = static_cast<T>(acc[static_cast<size_t>(c)]);
  }
}

}  // namespace fluxion::cpu::accumulate
