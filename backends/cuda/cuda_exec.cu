// CudaExec's host entries: launch checks, reads back to the host, and cuBLAS GEMMs.
#include "backends/cuda/cuda_exec.cuh"

#include "fluxion/cuda.hpp"
#include "fluxion/errors.hpp"

namespace fluxion::cuda {

void check_launch(const char* op) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) detail::fail<DeviceError>(op, "kernel launch failed: ", error_text(e), ".");
}

void CudaExec::to_host(void* dst, const void* src, int64_t bytes, Device src_device) {
  if (bytes > 0) memory::copy(dst, Device::cpu(), src, src_device, bytes);
}

void CudaExec::gemm(const GemmCall& call, DType dtype, const void* a, const void* b, void* c) {
  if (dtype != f32 && dtype != f64)
    detail::fail<DTypeError>("dot_general", "the cuBLAS GEMM runs f32 and f64, got ", dtype, ".");
  if (call.m == 0 || call.n == 0 || call.batch == 0) return;
  const int device = current_device();
  const int64_t elem = dtype_size(dtype);
  if (call.k == 0) {  // an empty sum: zeros (+0.0), whatever cuBLAS does with k = 0
    if (call.ldc != call.m || call.stride_c != call.m * call.n)
      detail::fail<NotImplementedError>("dot_general", "an empty contraction into a strided output (ldc ", call.ldc,
                                        ", stride ", call.stride_c, ") is not supported.");
    check(cudaMemsetAsync(c, 0, static_cast<size_t>(call.m * call.n * call.batch * elem), stream(device)),
          "dot_general", "cudaMemsetAsync");
    return;
  }
  Libraries lib(device);
  const cublasOperation_t op_a = call.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = call.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (dtype == f32) {
    const float one = 1.f, zero = 0.f;
    const cublasComputeType_t compute = tf32_enabled() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    check_cublas(
        cublasGemmStridedBatchedEx_64(lib.cublas(), op_a, op_b, call.m, call.n, call.k, &one, a, CUDA_R_32F, call.lda,
                                      call.stride_a, b, CUDA_R_32F, call.ldb, call.stride_b, &zero, c, CUDA_R_32F,
                                      call.ldc, call.stride_c, call.batch, compute, CUBLAS_GEMM_DEFAULT),
        "dot_general", "cublasGemmStridedBatchedEx (f32)");
  } else {
    const double one = 1.0, zero = 0.0;
    check_cublas(
        cublasGemmStridedBatchedEx_64(lib.cublas(), op_a, op_b, call.m, call.n, call.k, &one, a, CUDA_R_64F, call.lda,
                                      call.stride_a, b, CUDA_R_64F, call.ldb, call.stride_b, &zero, c, CUDA_R_64F,
                                      call.ldc, call.stride_c, call.batch, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
        "dot_general", "cublasGemmStridedBatchedEx (f64)");
  }
}

}  // namespace fluxion::cuda
