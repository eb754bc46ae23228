/// CPU conv_general_dilated: im2col + the project's GEMM. For each group g, the patches of the lhs that the
/// output positions read become the columns of a (K = features per group x kernel positions) by
/// (batch x output positions) matrix; the weights, copied to (group, out feature, K) order, multiply it in one
/// batched dot_general (backends/cpu/gemm.hpp, which picks Eigen, OpenBLAS or oneDNN by shape), and the
/// product is scattered into the output's layout. Any dimension numbers, padding (negative crops) and
/// dilations go through the same patch copy; large batches are done in chunks so that the patch matrix stays
/// near 16 MiB.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu/gemm.hpp"
#include "backends/reference/convolution.hpp"

namespace fluxion::cpu {
namespace convolution_detail {

using reference::convolution_detail::ConvGeometry;

inline int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

/// Unravels flat index `flat` over `size` (row-major) into `idx`.
inline void unravel(int64_t flat, const std::vector<int64_t>& size, std::vector<int64_t>& idx) {
  for (size_t d = size.size(); d-- > 0;) {
    idx[d] = flat % size[d];
    flat /= size[d];
  }
}

/// A run of patch-matrix entries copied from the lhs: `len` entries starting at position `dst` of a
/// patch-matrix row, read from lhs element offset `src` on, `step` elements apart.
struct PatchRun {
  int64_t dst, len, src, step;
};

/// For kernel position k (a multi-index), the runs of output positions (row-major over out_size) that read
/// real lhs elements, each a stretch of the last spatial dim; positions outside every run read padding or
/// dilation holes (zeros). Returns the number of positions covered.
inline int64_t patch_runs(const ConvGeometry& g, const std::vector<int64_t>& k, std::vector<PatchRun>& runs) {
  const int64_t ns = g.spatial();
  runs.clear();
  if (ns == 0) {
    runs.push_back({0, 1, 0, 1});
    return 1;
  }
  // Offsets over the leading spatial dims (all but the last), -1 where they leave the lhs.
  std::vector<int64_t> lead(1, 0);
  for (int64_t d = 0; d + 1 < ns; ++d) {
    const size_t u = static_cast<size_t>(d);
    std::vector<int64_t> next;
    next.reserve(lead.size() * static_cast<size_t>(g.out_size[u]));
    for (int64_t base : lead)
      for (int64_t o = 0; o < g.out_size[u]; ++o) {
        const int64_t i = g.input_index(d, o, k[u]);
        next.push_back(base < 0 || i < 0 ? -1 : base + i * g.lhs_step[u + 2]);
      }
    lead.swap(next);
  }
  const int64_t last = ns - 1, width = g.out_size[static_cast<size_t>(last)];
  const int64_t step = g.lhs_step[static_cast<size_t>(last + 2)];
  // Output positions o of the last dim that read element (o * stride - pad + k * rhs_dilation) / lhs_dilation.
  std::vector<std::pair<int64_t, int64_t>> hits;  // (o, lhs index), increasing
  for (int64_t o = 0; o < width; ++o) {
    const int64_t i = g.input_index(last, o, k[static_cast<size_t>(last)]);
    if (i >= 0) hits.push_back({o, i});
  }
  int64_t covered = 0;
  for (size_t r = 0; r < lead.size(); ++r) {
    if (lead[r] < 0) continue;
    const int64_t row = static_cast<int64_t>(r) * width;
    // Hits at equally spaced o with equally spaced lhs indices form one run (always so without lhs dilation).
    for (size_t h = 0; h < hits.size();) {
      size_t e = h + 1;
      const int64_t di = e < hits.size() ? hits[e].second - hits[h].second : 1;
      while (e < hits.size() && hits[e].first == hits[e - 1].first + 1 && hits[e].second - hits[e - 1].second == di)
        ++e;
      const PatchRun run{row + hits[h].first, static_cast<int64_t>(e - h), lead[r] + hits[h].second * step, di * step};
      // A run continuing the previous one in both the row and the lhs (a full-width row after another) extends it.
      if (!runs.empty() && runs.back().step == run.step && runs.back().dst + runs.back().len == run.dst &&
          runs.back().src + runs.back().len * run.step == run.src)
        runs.back().len += run.len;
      else runs.push_back(run);
      covered += static_cast<int64_t>(e - h);
      h = e;
    }
  }
  return covered;
}

/// Room for n elements of T, the calling thread's buffer number `slot` (0: weights, 1: patches, 2: product),
/// kept between calls so that steady-state calls neither allocate nor fault pages in; above 64 MiB the room is
/// allocated into `owned` for this call only. The contents are garbage. (Not cpu::scratch_buffer: the GEMM
/// uses those slots for its own operand copies while ours are live.)
template <class T> T* conv_scratch(int slot, size_t n, std::unique_ptr<T[]>& owned) {
  if (n * sizeof(T) > (size_t(64) << 20)) {
    owned.reset(new T[n]);
    return owned.get();
  }
  thread_local std::vector<T> kept[3];
  std::vector<T>& b = kept[slot];
  if (b.size() < n) b.resize(n);
  return b.data();
}

/// The geometry with the roles of output positions and kernel positions exchanged (input_index is symmetric in
/// (out position, stride) and (kernel position, rhs dilation)): its patch_runs run along kernel positions.
inline ConvGeometry swap_window(ConvGeometry g) {
  std::swap(g.out_size, g.kernel_size);
  std::swap(g.stride, g.rhs_dilation);
  return g;
}

/// Writes one patch-matrix row of `len` entries: the runs (in increasing dst order) copied from the lhs slice
/// `src`, zeros between them.
template <class T> void fill_row(const T* src, const std::vector<PatchRun>& runs, T* row, int64_t len) {
  int64_t at = 0;
  for (const PatchRun& r : runs) {
    std::fill(row + at, row + r.dst, T(0));
    if (r.step == 1) std::copy(src + r.src, src + r.src + r.len, row + r.dst);
    else
      for (int64_t j = 0; j < r.len; ++j) row[r.dst + j] = src[r.src + j * r.step];
    at = r.dst + r.len;
  }
  std::fill(row + at, row + len, T(0));
}

/// Patch matrix of output batches [n0, n0 + cn) with one row per (group, in feature, tap) and one column per
/// (batch, output position): rows run along the output's last spatial dim (long runs when it is the larger).
template <class T> void patches_by_tap(const T* lhs, const ConvGeometry& g, int64_t n0, int64_t cn, T* cols) {
  const int64_t positions = product(g.out_size), taps = product(g.kernel_size), depth = g.group_in * taps;
  const int64_t width = cn * positions;
  auto tap_rows = [&](int64_t t) {  // every row of kernel position t
    std::vector<int64_t> k(static_cast<size_t>(g.spatial()));
    std::vector<PatchRun> runs;
    unravel(t, g.kernel_size, k);
    patch_runs(g, k, runs);
    for (int64_t grp = 0; grp < g.groups; ++grp)
      for (int64_t i = 0; i < g.group_in; ++i)
        for (int64_t n = 0; n < cn; ++n)
          fill_row(lhs + g.lhs_batch(grp, n0 + n) * g.lhs_step[0] + g.lhs_feature(grp, i) * g.lhs_step[1], runs,
                   cols + (grp * depth + i * taps + t) * width + n * positions, positions);
  };
  // Rows of different kernel positions are disjoint: large copies share them out over the kernel's threads.
  const int threads = g.groups * depth * width >= (int64_t(1) << 18) ? kernel_threads() : 1;
  parallel_ranges(taps, threads, 1, 1, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) tap_rows(t);
  });
}

/// The transposed patch matrix: one row per (group, batch, output position), one column per (in feature, tap);
/// rows run along the kernel's last spatial dim (long runs for a large kernel, as in weight gradients).
template <class T> void patches_by_position(const T* lhs, const ConvGeometry& g, int64_t n0, int64_t cn, T* cols) {
  const int64_t positions = product(g.out_size), taps = product(g.kernel_size), depth = g.group_in * taps;
  const ConvGeometry swapped = swap_window(g);
  auto position_rows = [&](int64_t p) {  // every row of output position p
    std::vector<int64_t> o(static_cast<size_t>(g.spatial()));
    std::vector<PatchRun> runs;
    unravel(p, g.out_size, o);
    patch_runs(swapped, o, runs);
    for (int64_t grp = 0; grp < g.groups; ++grp)
      for (int64_t n = 0; n < cn; ++n)
        for (int64_t i = 0; i < g.group_in; ++i)
          fill_row(lhs + g.lhs_batch(grp, n0 + n) * g.lhs_step[0] + g.lhs_feature(grp, i) * g.lhs_step[1], runs,
                   cols + ((grp * cn + n) * positions + p) * depth + i * taps, taps);
  };
  const int threads = g.groups * depth * cn * positions >= (int64_t(1) << 18) ? kernel_threads() : 1;
  parallel_ranges(positions, threads, 1, 1, [&](int64_t p0, int64_t p1, int) {
    for (int64_t p = p0; p < p1; ++p) position_rows(p);
  });
}

/// Element offsets of the row-major positions of `size` for the spatial steps step[2:].
inline std::vector<int64_t> spatial_offsets(const std::vector<int64_t>& size, const std::vector<int64_t>& step) {
  std::vector<int64_t> idx(size.size()), out(static_cast<size_t>(product(size)));
  for (size_t p = 0; p < out.size(); ++p) {
    unravel(static_cast<int64_t>(p), size, idx);
    int64_t off = 0;
    for (size_t d = 0; d < size.size(); ++d) off += idx[d] * step[d + 2];
    out[p] = off;
  }
  return out;
}

/// The weights packed for the GEMM with depth = (in feature, kernel position): (group, out feature, depth), or
/// with `depth_major` (group, depth, out feature).
template <class T> void pack_weights(const T* rhs, const ConvGeometry& g, bool depth_major, T* w) {
  const std::vector<int64_t> tap_offset = spatial_offsets(g.kernel_size, g.rhs_step);
  const int64_t taps = static_cast<int64_t>(tap_offset.size()), depth = g.group_in * taps;
  bool contiguous = true;  // kernel positions row-major at stride 1 (OIHW, IOHW...)
  for (int64_t t = 0; t < taps && contiguous; ++t) contiguous = tap_offset[static_cast<size_t>(t)] == t;
  if (depth_major) {  // a transpose per (group, in feature), in 16 x 16 tiles that stay in L1
    const int64_t b = 16, rs = g.rhs_step[0];
    for (int64_t grp = 0; grp < g.groups; ++grp)
      for (int64_t i = 0; i < g.group_in; ++i) {
        const T* from = rhs + grp * g.group_out * rs + i * g.rhs_step[1];
        T* to = w + (grp * depth + i * taps) * g.group_out;
        for (int64_t o0 = 0; o0 < g.group_out; o0 += b)
          for (int64_t t0 = 0; t0 < taps; t0 += b) {
            const int64_t o1 = std::min(o0 + b, g.group_out), t1 = std::min(t0 + b, taps);
            if (contiguous && t1 - t0 == b && o1 - o0 == b) {  // a full tile through a local buffer (vectorized)
              T tile[16][16];
              for (int64_t o = 0; o < b; ++o)
                std::copy(from + (o0 + o) * rs + t0, from + (o0 + o) * rs + t0 + b, tile[o]);
              for (int64_t t = 0; t < b; ++t)
                for (int64_t o = 0; o < b; ++o) to[(t0 + t) * g.group_out + o0 + o] = tile[o][t];
              continue;
            }
            for (int64_t o = o0; o < o1; ++o)
              for (int64_t t = t0; t < t1; ++t)
                to[t * g.group_out + o] = from[o * rs + (contiguous ? t : tap_offset[static_cast<size_t>(t)])];
          }
      }
    return;
  }
  for (int64_t f = 0; f < g.groups * g.group_out; ++f)
    for (int64_t i = 0; i < g.group_in; ++i) {
      const T* from = rhs + f * g.rhs_step[0] + i * g.rhs_step[1];
      T* to = w + f * depth + i * taps;
      if (contiguous) std::copy(from, from + taps, to);
      else
        for (int64_t t = 0; t < taps; ++t) to[t] = from[tap_offset[static_cast<size_t>(t)]];
    }
}

}  // namespace convolution_detail

/// out = conv_general_dilated(lhs, rhs) for floating T (the output buffer is fully written). Two layouts of
/// the patch matrix, chosen so that its copies are long: by tap (rows along the output's last spatial dim, the
/// usual case) or by position (rows along the kernel's last spatial dim, when the kernel is the larger, as in
/// weight gradients); each multiplies weights packed to match without a transposed GEMM operand.
template <class T>
void conv_general_dilated(const T* lhs, const T* rhs, T* out, const convolution_detail::ConvGeometry& g) {
  using namespace convolution_detail;
  const int64_t ns = g.spatial(), features = g.groups * g.group_out, og = g.group_out;
  const int64_t positions = product(g.out_size), depth = g.group_in * product(g.kernel_size);
  if (g.out_batch == 0 || features == 0 || positions == 0) return;
  if (depth == 0) {  // nothing to sum: every output is zero
    std::fill(out, out + g.out_batch * features * positions, T(0));
    return;
  }
  const bool by_position = ns > 0 && g.kernel_size.back() > g.out_size.back();
  std::unique_ptr<T[]> owned_w, owned_cols, owned_prod;
  T* w = conv_scratch<T>(0, static_cast<size_t>(features * depth), owned_w);
  pack_weights(rhs, g, by_position, w);
  const std::vector<int64_t> out_offset = spatial_offsets(g.out_size, g.out_step);
  // Chunks of output batches whose patch matrix stays near 1 MiB (f32), so that the GEMM reads it from cache
  // right after it is written; at least 512 columns, so that the GEMM stays efficient; all of equal size.
  const int64_t budget = int64_t(1) << 18, min_width = 512;
  int64_t chunk = std::clamp<int64_t>(
      std::max(budget / (g.groups * depth * positions), (min_width + positions - 1) / positions), 1, g.out_batch);
  const int64_t chunks = (g.out_batch + chunk - 1) / chunk;
  chunk = (g.out_batch + chunks - 1) / chunks;
  T* cols = conv_scratch<T>(1, static_cast<size_t>(g.groups * depth * chunk * positions), owned_cols);
  T* prod = conv_scratch<T>(2, static_cast<size_t>(features * chunk * positions), owned_prod);
  // Output positions contiguous in the output (row-major spatial dims, last of stride 1): a product row is one
  // copy, and a single batch's (feature, position) product is written in place when features follow at stride
  // `positions` (the NCHW case).
  bool contiguous = true;
  for (int64_t p = 0; p < positions && contiguous; ++p) contiguous = out_offset[static_cast<size_t>(p)] == p;
  const bool in_place = !by_position && contiguous && g.out_step[1] == positions;
  for (int64_t n0 = 0; n0 < g.out_batch; n0 += chunk) {
    const int64_t cn = std::min(chunk, g.out_batch - n0), width = cn * positions;
    if (by_position) {  // prod: (group, batch x position, out feature)
      patches_by_position(lhs, g, n0, cn, cols);
      cpu::dot_general(cols, {g.groups, width, depth}, w, {g.groups, depth, og}, {{2}, {1}}, {{0}, {0}}, prod);
      for (int64_t grp = 0; grp < g.groups; ++grp)
        for (int64_t n = 0; n < cn; ++n)
          for (int64_t p = 0; p < positions; ++p) {
            const T* from = prod + (grp * width + n * positions + p) * og;
            T* to = out + (n0 + n) * g.out_step[0] + grp * og * g.out_step[1] + out_offset[static_cast<size_t>(p)];
            for (int64_t o = 0; o < og; ++o) to[o * g.out_step[1]] = from[o];
          }
      continue;
    }
    // prod: (group, out feature, batch x position)
    T* dst = cn == 1 && in_place ? out + n0 * g.out_step[0] : prod;
    patches_by_tap(lhs, g, n0, cn, cols);
    cpu::dot_general(w, {g.groups, og, depth}, cols, {g.groups, depth, width}, {{2}, {1}}, {{0}, {0}}, dst);
    if (dst != prod) continue;
    for (int64_t f = 0; f < features; ++f)
      for (int64_t n = 0; n < cn; ++n) {
        const T* from = prod + (f * cn + n) * positions;
        T* to = out + (n0 + n) * g.out_step[0] + f * g.out_step[1];
        if (contiguous) std::copy(from, from + positions, to);
        else
          for (int64_t p = 0; p < positions; ++p) to[out_offset[static_cast<size_t>(p)]] = from[p];
      }
  }
}

}  // namespace fluxion::cpu
