/// linalg_solve in the CUDA kernel table: one body index per matrix of the batch runs the
/// reference's algorithm (primitives/linalg.cpp): Gaussian elimination with partial pivoting (the
/// largest magnitude in the column, the first one on ties) and back substitution, in double
/// (the reference's long double does not exist on devices), rounded once to the output dtype.
/// A matrix that meets an exactly zero pivot records its column; the host reads the records and
/// throws the reference's singular-matrix Error for the first such matrix. cuSOLVER comes later.
#pragma once
#include <vector>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"

namespace fluxion::primitives::linalg_detail {
// Defined in primitives/linalg.cpp, which has no header yet: the singular-matrix Error of matrix
// `index` of `a` (zero pivot in `column`), shared with the CPU and reference kernels.
[[noreturn]] void fail_singular(const AbstractValue& a, int64_t index, int64_t column);
}  // namespace fluxion::primitives::linalg_detail

namespace fluxion::cuda {

/// The linalg_solve primitive (looked up by name: primitives/linalg.cpp exports no header).
inline const Primitive& solve_primitive() {
  const Primitive* p = find_primitive("linalg_solve");
  if (!p) detail::fail<Error>("linalg_solve", "internal: the primitive is not registered.");
  return *p;
}

namespace product_kernels {

/// Matrix `bi`: a (n x n) and b (n x k) copied into the double scratch m and r (row-major), solved
/// in place in r, written to x; singular[bi] is the column of the first zero pivot, or -1.
template <class T> struct SolveBody {
  const T* a;
  const T* b;
  T* x;
  double* m;
  double* r;
  int64_t* singular;
  fx_index n, k;

  FLUXION_HD static double magnitude(double v) { return v < 0 ? -v : v; }

  FLUXION_HD void operator()(fx_index bi) const {
    double* M = m + bi * n * n;
    double* R = r + bi * n * k;
    for (fx_index e = 0; e < n * n; ++e) M[e] = static_cast<double>(a[bi * n * n + e]);
    for (fx_index e = 0; e < n * k; ++e) R[e] = static_cast<double>(b[bi * n * k + e]);
    for (fx_index c = 0; c < n; ++c) {
      fx_index p = c;
      for (fx_index i = c + 1; i < n; ++i)
        if (magnitude(M[i * n + c]) > magnitude(M[p * n + c])) p = i;
      if (M[p * n + c] == 0) {
        singular[bi] = c;
        return;
      }
      if (p != c) {
        for (fx_index j = 0; j < n; ++j) swap(M[p * n + j], M[c * n + j]);
        for (fx_index j = 0; j < k; ++j) swap(R[p * k + j], R[c * k + j]);
      }
      for (fx_index i = c + 1; i < n; ++i) {
        const double f = M[i * n + c] / M[c * n + c];
        for (fx_index j = c + 1; j < n; ++j) M[i * n + j] -= f * M[c * n + j];
        for (fx_index j = 0; j < k; ++j) R[i * k + j] -= f * R[c * k + j];
      }
    }
    // Back substitution in place: rows below i already hold the solution.
    for (fx_index i = n - 1; i >= 0; --i)
      for (fx_index j = 0; j < k; ++j) {
        double acc = R[i * k + j];
        for (fx_index q = i + 1; q < n; ++q) acc -= M[i * n + q] * R[q * k + j];
        R[i * k + j] = acc / M[i * n + i];
      }
    for (fx_index e = 0; e < n * k; ++e) x[bi * n * k + e] = static_cast<T>(R[e]);
    singular[bi] = -1;
  }

  FLUXION_HD static void swap(double& u, double& v) {
    const double t = u;
    u = v;
    v = t;
  }
};

template <class Exec> void solve_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  const Tensor &a = in[0], &b = in[1];
  const int64_t rank = a.ndim(), n = a.shape()[rank - 1], k = b.shape()[rank - 1];
  const int64_t batch = n == 0 ? 0 : a.size() / (n * n);
  if (batch == 0) return;  // no matrices, or 0 x 0 ones: nothing to solve or write
  const Device dev = a.device();
  Tensor m = fluxion::empty(AbstractValue{Shape{batch * n * n}, f64}, dev);
  Tensor r = fluxion::empty(AbstractValue{Shape{batch * n * k}, f64}, dev);
  Tensor singular = fluxion::empty(AbstractValue{Shape{batch}, i64}, dev);
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>)
      Exec::for_each(batch, SolveBody<T>{a.data<T>(), b.data<T>(), out[0].mutable_data<T>(), m.mutable_data<double>(),
                                         r.mutable_data<double>(), singular.mutable_data<int64_t>(), n, k});
  });
  std::vector<int64_t> column(static_cast<size_t>(batch));
  Exec::to_host(column.data(), singular.data<int64_t>(), batch * static_cast<int64_t>(sizeof(int64_t)), dev);
  for (int64_t bi = 0; bi < batch; ++bi)
    if (column[static_cast<size_t>(bi)] >= 0)
      primitives::linalg_detail::fail_singular(a.aval(), bi, column[static_cast<size_t>(bi)]);
}

}  // namespace product_kernels
}  // namespace fluxion::cuda
