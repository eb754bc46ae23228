/// Broadcast copies of fused groups: a broadcast_in_dim member's block filled from its operand by
/// index mapping over its coalesced dims (runs copied, filled or gathered; repeated rows copied from
/// the output itself).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "runtime/plan.hpp"

namespace fluxion::cpu {

namespace broadcast_detail {

/// `run` elements of S bytes from `src` with element stride `step` (0: one value repeated).
template <int S> inline void copy_run(char* o, const char* src, int64_t run, int64_t step) {
  using Bits = std::conditional_t<S == 1, uint8_t,
                                  std::conditional_t<S == 2, uint16_t, std::conditional_t<S == 4, uint32_t, uint64_t>>>;
  Bits* ob = reinterpret_cast<Bits*>(o);
  if (step == 1) {
    std::memcpy(o, src, static_cast<size_t>(run) * S);
  } else if (step == 0) {  // a typed fill, so that the compiler vectorises it
    Bits v;
    std::memcpy(&v, src, S);
    switch (run) {  // short runs (each element repeated 2-4 times) skip the vector loop's set-up
      case 1: ob[0] = v; break;
      case 2: ob[0] = ob[1] = v; break;
      case 3: ob[0] = ob[1] = ob[2] = v; break;
      case 4: ob[0] = ob[1] = ob[2] = ob[3] = v; break;
      default:
        for (int64_t i = 0; i < run; ++i) ob[i] = v;
    }
  } else {
    for (int64_t i = 0; i < run; ++i) std::memcpy(ob + i, src + i * step * S, S);
  }
}

/// Elements [start, start + len) of a broadcast member's output, S bytes each.
template <int S> void broadcast_block(char* out, const char* src, const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& strides, int64_t start, int64_t len) {
  const int nd = static_cast<int>(dims.size());
  const int64_t inner = dims.back(), step = strides.back();
  // Rows repeat along dim nd-2 when its stride is 0: those are copied from the output itself.
  const bool rows_repeat = nd >= 2 && strides[static_cast<size_t>(nd - 2)] == 0;
  if (nd == 1 || (nd == 2 && !rows_repeat)) {  // the common case after coalescing: rows of a matrix
    const int64_t outer_stride = nd == 2 ? strides[0] : 0;
    int64_t row = start / inner, col = start % inner;
    for (int64_t done = 0; done < len; col = 0, ++row) {
      const int64_t run = std::min(inner - col, len - done);
      copy_run<S>(out + done * S, src + (row * outer_stride + col * step) * S, run, step);
      done += run;
    }
    return;
  }
  int64_t idx[8];
  int64_t soff = 0, rem = start;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % dims[static_cast<size_t>(d)];
    rem /= dims[static_cast<size_t>(d)];
    soff += idx[d] * strides[static_cast<size_t>(d)];
  }
  // Advances the index from dim `from` down (a carry), keeping soff the source offset.
  auto carry = [&](int from) {
    for (int d = from; d >= 0; --d) {
      soff += strides[static_cast<size_t>(d)];
      if (++idx[d] < dims[static_cast<size_t>(d)]) break;
      soff -= dims[static_cast<size_t>(d)] * strides[static_cast<size_t>(d)];
      idx[d] = 0;
    }
  };
  for (int64_t done = 0; done < len;) {
    if (rows_repeat && idx[nd - 1] == 0 && idx[nd - 2] > 0 && done >= inner) {
      // The row before this one (already written) has the same source: copy whole rows from it,
      // doubling the copied span each time (log2 rows copies instead of one per row).
      const int64_t rows = std::min(dims[static_cast<size_t>(nd - 2)] - idx[nd - 2], (len - done) / inner);
      if (rows > 0) {
        char* base = out + (done - inner) * S;
        const size_t row_bytes = static_cast<size_t>(inner) * S;
        for (int64_t have = 1, need = rows; need > 0;) {
          const int64_t c = std::min(have, need);
          std::memcpy(base + static_cast<size_t>(have) * row_bytes, base, static_cast<size_t>(c) * row_bytes);
          have += c;
          need -= c;
        }
        done += rows * inner;
        idx[nd - 2] += rows - 1;  // the carry below adds the last one (stride 0: soff unchanged)
        carry(nd - 2);
        continue;
      }
    }
    const int64_t run = std::min(inner - idx[nd - 1], len - done);
    copy_run<S>(out + done * S, src + soff * S, run, step);
    done += run;
    idx[nd - 1] += run;
    soff += run * step;
    if (idx[nd - 1] < inner) continue;
    soff -= inner * step;
    idx[nd - 1] = 0;
    carry(nd - 2);
  }
}

}  // namespace broadcast_detail

/// Elements [start, start + len) of broadcast member `m`'s output at `out`, from its operand `src`.
inline void run_broadcast(const runtime::FusedMember& m, char* out, const char* src, int64_t start, int64_t len) {
  using broadcast_detail::broadcast_block;
  switch (m.output.itemsize) {
    case 1: broadcast_block<1>(out, src, m.bdims, m.bsrc, start, len); break;
    case 2: broadcast_block<2>(out, src, m.bdims, m.bsrc, start, len); break;
    case 4: broadcast_block<4>(out, src, m.bdims, m.bsrc, start, len); break;
    default: broadcast_block<8>(out, src, m.bdims, m.bsrc, start, len); break;
  }
}

}  // namespace fluxion::cpu
