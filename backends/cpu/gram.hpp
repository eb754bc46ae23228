/// CPU gram kernel: out = xᵀ diag(s) x for a row-major x [N, D] and s [N]. Only the lower
/// triangle is multiplied out (about half the multiply-adds of a full GEMM): the rows of x are
/// scaled by s into a scratch B, the lower triangle of xᵀ B is computed one block row of
/// kPanelRows rows at a time (one GEMM each, up to and including its diagonal block), and the
/// strict lower triangle is then mirrored into the upper one, so the result is exactly symmetric.
/// Each GEMM takes the path choose_product picks for a strided product (backends/cpu/gemm_choice.hpp).
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>

#include "backends/cpu/gemm.hpp"
#include "src/allocator.hpp"

namespace fluxion::cpu {
namespace gram_detail {

/// Rows per block row of the lower triangle (one GEMM each). Chosen by measurement (f64, N = D =
/// 1000, one thread): see the header comment of primitives/gram.cpp.
inline constexpr int64_t kPanelRows = 128;
/// Tile edge of the mirroring transpose copy (two 32x32 f64 tiles fit in L1).
inline constexpr int64_t kMirrorTile = 32;

/// A scratch buffer of `count` elements from the tensor allocator's cache (so that repeated calls
/// do not hit malloc), returned on destruction.
template <class T> class ScratchBuffer {
 public:
  explicit ScratchBuffer(size_t count) : bytes_(count * sizeof(T)) {
    if (bytes_ > 0) data_ = static_cast<T*>(cpu_memory::allocate(bytes_));
  }
  ~ScratchBuffer() {
    if (data_) cpu_memory::deallocate(data_, bytes_);
  }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  T* get() const { return data_; }

 private:
  size_t bytes_;
  T* data_ = nullptr;
};

using gemm_detail::strided_gemm;

/// b[i, :] = s[i] x[i, :] for the n x d row-major x.
template <class T> void scale_rows(const T* x, const T* s, T* b, int64_t n, int64_t d) {
  for (int64_t i = 0; i < n; ++i) {
    const T si = s[i];
    const T* xi = x + i * d;
    T* bi = b + i * d;
    for (int64_t j = 0; j < d; ++j) bi[j] = si * xi[j];
  }
}

/// The lower triangle (at least: each panel's diagonal block is filled whole) of c = xᵀ b, for
/// x and b of n rows and d columns and c of d x d, one block row of `panel` rows per GEMM:
/// c[lo:hi, 0:hi] = x[:, lo:hi]ᵀ b[:, 0:hi]. Block rows measured 10-15 % faster than halving the
/// triangle recursively (whose many small diagonal GEMMs pack poorly).
template <class T> void lower_panels(const T* x, const T* b, T* c, int64_t n, int64_t d, int64_t panel) {
  for (int64_t lo = 0; lo < d; lo += panel) {
    const int64_t hi = std::min(lo + panel, d);
    strided_gemm<true, false>(x + lo, d, b, d, c + lo * d, d, hi - lo, hi, n);
  }
}

/// c[j, i] = c[i, j] for every i > j of the d x d row-major c, tile by tile.
template <class T> void mirror_lower(T* c, int64_t d) {
  for (int64_t ib = 0; ib < d; ib += kMirrorTile) {
    const int64_t ie = std::min(ib + kMirrorTile, d);
    for (int64_t jb = 0; jb <= ib; jb += kMirrorTile)
      for (int64_t i = ib; i < ie; ++i) {
        const int64_t je = std::min(jb + kMirrorTile, i);
        for (int64_t j = jb; j < je; ++j) c[j * d + i] = c[i * d + j];
      }
  }
}

}  // namespace gram_detail

/// out (d x d, row-major) = xᵀ diag(s) x for the n x d row-major x and s of n elements; exactly
/// symmetric. `panel_rows`: rows per block row (a tuning knob for benchmarks).
template <class T>
void gram(const T* x, const T* s, T* out, int64_t n, int64_t d, int64_t panel_rows = gram_detail::kPanelRows) {
  using namespace gram_detail;
  if (d == 0) return;
  if (n == 0) {
    std::fill(out, out + d * d, T(0));
    return;
  }
  ScratchBuffer<T> b(static_cast<size_t>(n * d));
  scale_rows(x, s, b.get(), n, d);
  lower_panels(x, b.get(), out, n, d, std::max<int64_t>(panel_rows, 1));
  mirror_lower(out, d);
}

}  // namespace fluxion::cpu
