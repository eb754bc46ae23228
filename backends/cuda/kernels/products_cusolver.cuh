/// CudaExec's linalg_solve (nvcc only, included by products_solve.hpp): LU with partial pivoting
/// by the vendor libraries on the device's stream. Small matrices (n <= kBatchedLuMax) go through
/// cuBLAS's batched getrf/getrs (one launch for the whole batch), larger ones through cuSOLVER's
/// 64-bit getrf/getrs, one matrix after another (a blocked LU that uses the whole GPU for large n;
/// where a batch of mid-size matrices is better served by the batched calls is for a GPU
/// measurement to say).
///
/// Precision: every system is solved in f64, f32 ones too (loaded into f64 scratch and rounded once
/// at the end, as the portable bodies do), so f32 results are the reference's up to its rounding and
/// f64 ones differ from the reference's long double elimination by rounding only.
///
/// Layout: a row-major matrix a is, read column-major, a^T. The scratch keeps a as stored and the
/// solve uses the transposed operation (getrf factors a^T = P L U; getrs with op T solves
/// (a^T)^T x = a x = b), so a is never transposed. b and x are row-major n x k; getrs wants
/// column-major right-hand sides, so the f64 load writes b column-major and the final rounding
/// reads x back into row-major order (both steps are needed anyway for the f64 conversion).
///
/// Singular matrices: getrf reports the first exactly zero pivot of each matrix in `info`; the host
/// reads the infos after the solve and throws the reference's Error (fail_singular) for the first
/// singular matrix of the batch. The column named is the first zero pivot of cuSOLVER's (cuBLAS's)
/// factorization of a^T, which may differ from the column where the reference's elimination of a
/// meets its first zero pivot; which matrices are singular is decided by an exactly zero pivot as
/// well, in f64 rather than long double.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <climits>
#include <vector>

#include "backends/cuda/context.cuh"
#include "backends/cuda/kernels/common.hpp"
#include "fluxion/errors.hpp"
#include "fluxion/tensor.hpp"
#include "primitives/linalg.hpp"

namespace fluxion::cuda::product_kernels {

/// Matrices up to this size take cuBLAS's batched LU (meant for many small matrices); larger ones
/// cuSOLVER's, one at a time.
inline constexpr int64_t kBatchedLuMax = 32;

/// am = a in f64 as stored (column-major a^T), bm = b in f64 column-major (n x k per matrix).
template <class T> struct LuLoadBody {
  const T* a;
  const T* b;
  double* am;
  double* bm;
  fx_index n, k;
  __host__ __device__ void operator()(fx_index e) const {  // e over batch * n * (n + k)
    const fx_index per = n * (n + k), bi = e / per, q = e % per;
    if (q < n * n) {
      am[bi * n * n + q] = static_cast<double>(a[bi * n * n + q]);
    } else {
      const fx_index r = q - n * n, row = r / k, col = r % k;
      bm[bi * n * k + col * n + row] = static_cast<double>(b[bi * n * k + r]);
    }
  }
};

/// x (row-major, T) = bm (column-major f64 solutions), rounded once.
template <class T> struct LuStoreBody {
  const double* bm;
  T* x;
  fx_index n, k;
  __host__ __device__ void operator()(fx_index e) const {  // e over batch * n * k
    const fx_index bi = e / (n * k), r = e % (n * k), row = r / k, col = r % k;
    x[e] = static_cast<T>(bm[bi * n * k + col * n + row]);
  }
};

/// ptrs[i] = base + i * stride: the pointer arrays of cuBLAS's batched calls.
struct PointerArrayBody {
  double* base;
  fx_index stride;
  double** ptrs;
  __host__ __device__ void operator()(fx_index i) const { ptrs[i] = base + i * stride; }
};

/// A cusolverDnParams_t for the scope (default settings: the 64-bit API's default algorithm).
class CusolverParams {
 public:
  CusolverParams() { check_cusolver(cusolverDnCreateParams(&p_), "linalg_solve", "cusolverDnCreateParams"); }
  ~CusolverParams() { cusolverDnDestroyParams(p_); }
  CusolverParams(const CusolverParams&) = delete;
  CusolverParams& operator=(const CusolverParams&) = delete;
  cusolverDnParams_t get() const { return p_; }

 private:
  cusolverDnParams_t p_ = nullptr;
};

/// Scratch of at least `bytes` bytes on `device` (an i64 tensor: 8-byte aligned, never empty).
inline Tensor lu_scratch(int64_t bytes, Device device) {
  return fluxion::empty(AbstractValue{Shape{bytes / 8 + 1}, i64}, device);
}

/// Factors and solves the batch in am/bm in place with cuBLAS's batched LU; getrf's infos go to
/// info[0, batch). n <= kBatchedLuMax and batch <= INT_MAX.
template <class Exec>
void batched_lu_solve(double* am, double* bm, int* info, int64_t batch, int64_t n, int64_t k, Device device) {
  Tensor pointers = lu_scratch(2 * batch * static_cast<int64_t>(sizeof(double*)), device);
  auto** a_ptrs = reinterpret_cast<double**>(pointers.mutable_data<int64_t>());
  double** b_ptrs = a_ptrs + batch;
  Tensor pivots = lu_scratch(batch * n * static_cast<int64_t>(sizeof(int)), device);
  int* pivot = reinterpret_cast<int*>(pivots.mutable_data<int64_t>());
  Exec::for_each(batch, PointerArrayBody{am, n * n, a_ptrs});
  Exec::for_each(batch, PointerArrayBody{bm, n * k, b_ptrs});
  Libraries lib(device.index);  // the device current, the handles' lock held, calls on its stream
  const int ni = static_cast<int>(n), bi = static_cast<int>(batch);
  check_cublas(cublasDgetrfBatched(lib.cublas(), ni, a_ptrs, ni, pivot, info, bi), "linalg_solve",
               "cublasDgetrfBatched");
  if (k == 0) return;
  // getrs's info is a host value that reports only invalid arguments (a bug here, not the data).
  int arg_info = 0;
  check_cublas(cublasDgetrsBatched(lib.cublas(), CUBLAS_OP_T, ni, static_cast<int>(k), a_ptrs, ni, pivot, b_ptrs, ni,
                                   &arg_info, bi),
               "linalg_solve", "cublasDgetrsBatched");
  if (arg_info != 0)
    fluxion::detail::fail<DeviceError>("linalg_solve", "cublasDgetrsBatched rejected its argument ", -arg_info, " (n ",
                                       n, ", k ", k, ", batch ", batch, ")", ". Please report this bug.");
}

/// The same with cuSOLVER's 64-bit getrf/getrs, matrix after matrix on the device's stream (one
/// pivot array and one workspace serve them all: the calls run in stream order). getrf's infos go
/// to info[0, batch), getrs's (invalid arguments only) to info[batch, 2 batch).
inline void cusolver_lu_solve(double* am, double* bm, int* info, int64_t batch, int64_t n, int64_t k, Device device) {
  Tensor pivots = lu_scratch(n * static_cast<int64_t>(sizeof(int64_t)), device);
  int64_t* pivot = pivots.mutable_data<int64_t>();
  Libraries lib(device.index);
  const CusolverParams params;
  size_t device_bytes = 0, host_bytes = 0;
  check_cusolver(cusolverDnXgetrf_bufferSize(lib.cusolver(), params.get(), n, n, CUDA_R_64F, am, n, CUDA_R_64F,
                                             &device_bytes, &host_bytes),
                 "linalg_solve", "cusolverDnXgetrf_bufferSize");
  Tensor workspace = lu_scratch(static_cast<int64_t>(device_bytes), device);
  // Host workspace (usually none): the calls may use it after they return, so it is freed only
  // after the stream has caught up (the synchronisation at the end).
  std::vector<char> host_workspace(host_bytes);
  for (int64_t bi = 0; bi < batch; ++bi) {
    double* a_i = am + bi * n * n;
    check_cusolver(cusolverDnXgetrf(lib.cusolver(), params.get(), n, n, CUDA_R_64F, a_i, n, pivot, CUDA_R_64F,
                                    workspace.mutable_data<int64_t>(), device_bytes,
                                    host_bytes ? host_workspace.data() : nullptr, host_bytes, info + bi),
                   "linalg_solve", "cusolverDnXgetrf");
    if (k > 0)
      check_cusolver(cusolverDnXgetrs(lib.cusolver(), params.get(), CUBLAS_OP_T, n, k, CUDA_R_64F, a_i, n, pivot,
                                      CUDA_R_64F, bm + bi * n * k, n, info + batch + bi),
                     "linalg_solve", "cusolverDnXgetrs");
  }
  if (host_bytes) check(cudaStreamSynchronize(lib.stream()), "linalg_solve", "cudaStreamSynchronize");
}

/// linalg_solve of `batch` n x n systems with k right-hand sides (batch, n >= 1): x = a \ b.
template <class Exec, class T>
void vendor_solve(const Tensor& a, const Tensor& b, Tensor& out, int64_t batch, int64_t n, int64_t k) {
  const Device dev = a.device();
  Tensor am = fluxion::empty(AbstractValue{Shape{batch * n * n}, f64}, dev);
  Tensor bm = fluxion::empty(AbstractValue{Shape{batch * n * k}, f64}, dev);
  Tensor infos = lu_scratch(2 * batch * static_cast<int64_t>(sizeof(int)), dev);
  int* info = reinterpret_cast<int*>(infos.mutable_data<int64_t>());
  check(cudaMemsetAsync(info, 0, 2 * static_cast<size_t>(batch) * sizeof(int), stream(dev.index)), "linalg_solve",
        "cudaMemsetAsync");
  Exec::for_each(batch * n * (n + k),
                 LuLoadBody<T>{a.data<T>(), b.data<T>(), am.mutable_data<double>(), bm.mutable_data<double>(), n, k});
  if (n <= kBatchedLuMax && batch <= INT_MAX)
    batched_lu_solve<Exec>(am.mutable_data<double>(), bm.mutable_data<double>(), info, batch, n, k, dev);
  else cusolver_lu_solve(am.mutable_data<double>(), bm.mutable_data<double>(), info, batch, n, k, dev);
  Exec::for_each(batch * n * k, LuStoreBody<T>{bm.data<double>(), out.mutable_data<T>(), n, k});
  std::vector<int> host(2 * static_cast<size_t>(batch));
  Exec::to_host(host.data(), info, 2 * batch * static_cast<int64_t>(sizeof(int)), dev);
  for (int64_t bi = 0; bi < batch; ++bi) {
    const int factor = host[static_cast<size_t>(bi)], solve = host[static_cast<size_t>(batch + bi)];
    if (factor < 0 || solve < 0)
      fluxion::detail::fail<DeviceError>("linalg_solve", "the LU of matrix ", bi, " rejected its argument ",
                                         -(factor < 0 ? factor : solve), " (n ", n, ", k ", k, ")",
                                         ". Please report this bug.");
    // info > 0: U(info, info) (1-based) is exactly zero -- cuSOLVER's first zero pivot of a^T.
    if (factor > 0) primitives::linalg_detail::fail_singular(a.aval(), bi, factor - 1);
  }
}

}  // namespace fluxion::cuda::product_kernels
