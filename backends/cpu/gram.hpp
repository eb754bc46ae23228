/// CPU gram kernel: out = xᵀ diag(s) x for a row-major x [N, D] and s [N]. Only the lower
/// triangle is multiplied out (about half the multiply-adds of a full GEMM): the rows of x are
/// scaled by s into a scratch B, the lower triangle of xᵀ B is computed one block row of
/// kLeaf rows at a time (one GEMM each, up to and including its diagonal block), and the strict lower triangle is then mirrored into the upper one, so the result is exactly
/// symmetric. GEMMs go to OpenBLAS or Eigen by the rules of backends/cpu/gemm.hpp.
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

/// Rows per block row of the lower triangle (one GEMM each). Chosen by measurement (bench W4
/// shape, f64 1000x1000, one thread): see the header comment of primitives/gram.cpp.
inline constexpr int64_t kLeaf = 128;
/// Tile edge of the mirroring transpose copy (two 32x32 f64 tiles fit in L1).
inline constexpr int64_t kMirrorTile = 32;

/// A scratch buffer of `count` elements from the tensor allocator's cache (so that repeated calls
/// do not hit malloc), returned on destruction.
template <class T>
class ScratchBuffer {
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

template <class T> using StridedMap = Eigen::Map<const gemm_detail::RowMajorMat<T>, 0, Eigen::OuterStride<>>;
template <class T> using MutableStridedMap = Eigen::Map<gemm_detail::RowMajorMat<T>, 0, Eigen::OuterStride<>>;

/// c (m x n, row-major, leading dim ldc) = op(a) op(b), where a is stored m x k (k x m when
/// TransA) with leading dim lda and b is stored k x n (n x k when TransB) with leading dim ldb.
/// Large products (m n k >= kLargeWork) run on num_threads() threads, through OpenBLAS when it is
/// usable; smaller ones through Eigen on the calling thread.
template <bool TransA, bool TransB, class T>
void strided_gemm(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc, int64_t m, int64_t n,
                  int64_t k) {
  const bool large = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) >= gemm_detail::kLargeWork;
#if FLUXION_WITH_BLAS
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    const bool fits = std::max({m, n, k, lda, ldb, ldc}) <= INT_MAX;
    if (large && fits && blas_usable()) {
      num_threads();  // applies the thread count to OpenBLAS once
      const auto ta = TransA ? CblasTrans : CblasNoTrans, tb = TransB ? CblasTrans : CblasNoTrans;
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0f, a, int(lda), b, int(ldb), 0.0f, c, int(ldc));
      else
        cblas_dgemm(CblasRowMajor, ta, tb, int(m), int(n), int(k), 1.0, a, int(lda), b, int(ldb), 0.0, c, int(ldc));
      return;
    }
  }
#endif
  gemm_detail::ProductThreads threads(large ? num_threads() : 1);
  const Eigen::OuterStride<> sa(lda), sb(ldb), sc(ldc);
  auto lhs = [&] {
    if constexpr (TransA) return StridedMap<T>(a, k, m, sa).transpose();
    else return StridedMap<T>(a, m, k, sa);
  }();
  auto rhs = [&] {
    if constexpr (TransB) return StridedMap<T>(b, n, k, sb).transpose();
    else return StridedMap<T>(b, k, n, sb);
  }();
  MutableStridedMap<T>(c, m, n, sc).noalias() = lhs * rhs;
}

/// b[i, :] = s[i] x[i, :] for the n x d row-major x.
template <class T>
void scale_rows(const T* x, const T* s, T* b, int64_t n, int64_t d) {
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
template <class T>
void lower_panels(const T* x, const T* b, T* c, int64_t n, int64_t d, int64_t panel) {
  for (int64_t lo = 0; lo < d; lo += panel) {
    const int64_t hi = std::min(lo + panel, d);
    strided_gemm<true, false>(x + lo, d, b, d, c + lo * d, d, hi - lo, hi, n);
  }
}

/// c[j, i] = c[i, j] for every i > j of the d x d row-major c, tile by tile.
template <class T>
void mirror_lower(T* c, int64_t d) {
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
/// symmetric. `leaf`: rows per block row (a tuning knob for benchmarks).
template <class T>
void gram(const T* x, const T* s, T* out, int64_t n, int64_t d, int64_t leaf = gram_detail::kLeaf) {
  using namespace gram_detail;
  if (d == 0) return;
  if (n == 0) {
    std::fill(out, out + d * d, T(0));
    return;
  }
  ScratchBuffer<T> b(static_cast<size_t>(n * d));
  scale_rows(x, s, b.get(), n, d);
  lower_panels(x, b.get(), out, n, d, std::max<int64_t>(leaf, 1));
  mirror_lower(out, d);
}

}  // namespace fluxion::cpu
