/// Row-sum kernels of fused reductions: a reduce_sum member's block added into per-output double
/// sums (add_row_sums) run by run (rows of at most 4 elements in one loop), and the sums combined
/// over the threads and written out (write_row_sums). Every partial sum starts at -0.
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <type_traits>

#include "runtime/plan.hpp"

namespace fluxion::cpu {

/// Where every partial sum starts: -0, the identity of IEEE addition, as eager sums (-0 + x is x for
/// every x; from +0 a sum of -0 values would be +0, where eager's is -0).
inline constexpr double kSumStart = -0.0;

namespace row_sums_detail {

// GCC auto-vectorises with 256-bit vectors on AVX-512 machines unless told otherwise; the long
// sum below is converts and adds only, and 512-bit ones took it from 11.6 to 7.8 µs per 65536 f32.
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
#define FLUXION_WIDE_VECTORS __attribute__((target("prefer-vector-width=512")))
#else
#define FLUXION_WIDE_VECTORS
#endif

/// Rows at least this long are summed in 32 lanes, rows from kMidSumRow in 8 (lane_sum), shorter
/// ones by short_sum: short rows would spend most of their time setting up and combining 32
/// partial sums, and rows of 32 in short_sum's two add chains (measured: bench/RESULTS.md).
constexpr int64_t kWideSumRow = 64;
constexpr int64_t kMidSumRow = 16;

/// The sum of p[0, n) in double by kLanes partial sums combined pairwise at the end, so the inner
/// loop becomes vector converts and adds (f32 or f64) with kLanes / packet independent add chains.
/// Long rows (kWideSumRow) take 32 lanes (four scalar sums are not vectorised), rows from
/// kMidSumRow take 8 (one or two vector adds per step).
template <int kLanes, class T> FLUXION_WIDE_VECTORS double lane_sum(const T* p, int64_t n) {
  double s[kLanes];
  std::fill(s, s + kLanes, kSumStart);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) s[j] += static_cast<double>(p[i + j]);
  double tail = kSumStart;
  for (; i < n; ++i) tail += static_cast<double>(p[i]);
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j) s[j] += s[j + width];
  return s[0] + tail;
}

/// The sum of p[0, n) in double for short rows: two partial sums, inline.
template <class T> inline double short_sum(const T* p, int64_t n) {
  double s0 = kSumStart, s1 = kSumStart;
  int64_t i = 0;
  for (; i + 2 <= n; i += 2) {
    s0 += static_cast<double>(p[i]);
    s1 += static_cast<double>(p[i + 1]);
  }
  if (i < n) s0 += static_cast<double>(p[i]);
  return s0 + s1;
}

/// Rows up to this long are summed by sum_short_rows, whole rows in one loop: sums over 2 to 4
/// trailing elements (points in the plane or in space, quaternions) would otherwise pay a row's
/// bookkeeping and a call each (measured: bench/RESULTS.md).
constexpr int64_t kShortRowMax = 4;

/// acc[0, rows) += the sums of `rows` consecutive rows of R elements at p (short_sum's order).
template <int R, class T> void sum_short_rows(const T* p, int64_t rows, double* acc) {
  for (int64_t r = 0; r < rows; ++r) acc[r] += short_sum(p + r * R, R);
}

/// Periods (whole groups of rows that fill whole vectors) of sums over a middle dim are added
/// by sum_periods when they are at most this long.
constexpr int64_t kMaxSumPeriod = 64;

/// acc[j % inner] += the sums of element j of `chunks` consecutive periods of P elements at p (P
/// a multiple of `inner` and of 8): P partial sums in registers, folded onto `inner` outputs at
/// the end, instead of adding short runs of `inner` one by one (measured: bench/RESULTS.md).
template <int P, class T>
FLUXION_WIDE_VECTORS void sum_periods(const T* p, int64_t chunks, double* acc, int64_t inner) {
  double s[P];
  std::fill(s, s + P, kSumStart);
  for (int64_t c = 0; c < chunks; ++c)
    for (int j = 0; j < P; ++j) s[j] += static_cast<double>(p[c * P + j]);
  for (int j = 0; j < P; ++j) acc[j % inner] += s[j];
}

template <class T> void sum_periods(const T* p, int64_t chunks, int64_t period, double* acc, int64_t inner) {
  switch (period / 8) {
    case 1: return sum_periods<8>(p, chunks, acc, inner);
    case 2: return sum_periods<16>(p, chunks, acc, inner);
    case 3: return sum_periods<24>(p, chunks, acc, inner);
    case 4: return sum_periods<32>(p, chunks, acc, inner);
    case 5: return sum_periods<40>(p, chunks, acc, inner);
    case 6: return sum_periods<48>(p, chunks, acc, inner);
    case 7: return sum_periods<56>(p, chunks, acc, inner);
    default: return sum_periods<64>(p, chunks, acc, inner);
  }
}

}  // namespace row_sums_detail

/// Adds elements [start, start + len) of a reduce member's operand (`src`: the block, or one
/// value when `one`) into its per-output sums `acc` (double, whatever the operand's float type).
inline void add_row_sums(const runtime::FusedMember& m, const char* src, bool one, double* acc, int64_t start,
                         int64_t len) {
  using namespace row_sums_detail;
  dispatch_dtype(m.in_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* x = reinterpret_cast<const T*>(src);
      if (m.layout.inner > 1) {  // runs of `inner` elements add into runs of outputs
        const int64_t inner = m.layout.inner, span = m.layout.row * inner;
        const int64_t period = std::lcm(inner, int64_t(8));
        int64_t outer = start / span, q = start % span, c = q % inner;  // q: position in the span
        for (int64_t done = 0; done < len;) {
          if (!one && c == 0 && period <= kMaxSumPeriod) {
            const int64_t chunks = std::min(len - done, span - q) / period;
            if (chunks > 0) {
              sum_periods(x + done, chunks, period, acc + outer * inner, inner);
              done += chunks * period, q += chunks * period;
              if (q == span) q = 0, ++outer;
              continue;
            }
          }
          const int64_t run = std::min(inner - c, len - done);
          double* a = acc + outer * inner + c;
          if (one) {
            for (int64_t i = 0; i < run; ++i) a[i] += static_cast<double>(x[0]);
          } else {
            for (int64_t i = 0; i < run; ++i) a[i] += static_cast<double>(x[done + i]);
          }
          done += run, q += run, c += run;
          if (c == inner) {
            c = 0;
            if (q == span) q = 0, ++outer;
          }
        }
        return;
      }
      const int64_t row = m.layout.row;
      int64_t r = start / row, c = start % row;
      for (int64_t done = 0; done < len; c = 0, ++r) {
        if (!one && c == 0 && row <= kShortRowMax && len - done >= row) {
          const int64_t rows = (len - done) / row;
          switch (row) {
            case 1: sum_short_rows<1>(x + done, rows, acc + r); break;
            case 2: sum_short_rows<2>(x + done, rows, acc + r); break;
            case 3: sum_short_rows<3>(x + done, rows, acc + r); break;
            default: sum_short_rows<4>(x + done, rows, acc + r); break;
          }
          done += rows * row;
          r += rows - 1;  // and the loop's ++r
          continue;
        }
        const int64_t run = std::min(row - c, len - done);
        if (one) {
          acc[r] += static_cast<double>(x[0]) * static_cast<double>(run);
        } else {
          acc[r] += run >= kWideSumRow  ? lane_sum<32>(x + done, run)
                    : run >= kMidSumRow ? lane_sum<8>(x + done, run)
                                        : short_sum(x + done, run);
        }
        done += run;
      }
    }
  });
}

/// Writes part `part` of `parts` (a share of each member's rows) of the row sums of a step's
/// reduce members, summed over `threads` accumulator sets.
inline void write_row_sums(const runtime::Step& step, char* const* bases, const double* accumulators, int64_t stride,
                           int threads, int part, int parts) {
  for (const runtime::FusedMember& m : step.members) {
    if (!m.reduce) continue;
    const int64_t r0 = m.layout.outputs * part / parts, r1 = m.layout.outputs * (part + 1) / parts;
    dispatch_dtype(m.out_dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = reinterpret_cast<T*>(bases[m.output.index]);
      if (threads == 1) {  // a plain conversion loop: there may be as many sums as rows
        const double* acc = accumulators + m.acc;
        for (int64_t r = r0; r < r1; ++r) out[r] = static_cast<T>(acc[r]);
        return;
      }
      for (int64_t r = r0; r < r1; ++r) {
        double sum = kSumStart;
        for (int t = 0; t < threads; ++t) sum += accumulators[t * stride + m.acc + r];
        out[r] = static_cast<T>(sum);
      }
    });
  }
}

}  // namespace fluxion::cpu
