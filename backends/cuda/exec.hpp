/// The launch policy every CUDA kernel is written against. A kernel is a per-index body (a
/// trivially copyable functor with `FLUXION_HD void operator()(fx_index i) const`) plus a thin
/// host wrapper that reads the tensors and params and launches the body over n indices through
/// an Exec:
///
///   struct Exec {
///     static constexpr Backend backend;                   // the kernel table it fills
///     template <class F> static void for_each(fx_index n, const F& body);
///         // body(i) for every i in [0, n), in any order and in parallel; returns before or after
///         // the work is done (CUDA: queued on the device's stream). Bodies never depend on order.
///     static void to_host(void* dst, const void* src, int64_t bytes, Device src_device);
///         // reads device bytes on the host (dynamic indices, predicates); waits for queued work
///     static void gemm(const GemmCall& call, DType dtype, const void* a, const void* b, void* c);
///         // column-major C = op(A) op(B), alpha 1, beta 0, strided-batched (gemm_mapping.hpp)
///   };
///
/// EmulatedExec (below) runs the bodies on the CPU, one index at a time, in an order unlike a
/// sequential loop (blocks of 256 from the last block down), so a body that depends on the order of
/// indices fails the rule suite here rather than on a GPU. CudaExec (cuda_exec.cuh, nvcc only)
/// launches them as grid-stride kernels on the device's stream.
#pragma once
#include <algorithm>
#include <cstring>

#include "backends/cuda/device_code.hpp"
#include "backends/cuda/gemm_mapping.hpp"
#include "fluxion/device.hpp"
#include "fluxion/dtype.hpp"
#include "fluxion/errors.hpp"

namespace fluxion::cuda {

/// Threads per block of every launched body (and the emulation's block size).
inline constexpr fx_index kBlockThreads = 256;

/// Column-major strided-batched GEMM on the host: what cublas<t>gemmStridedBatched computes for
/// `call` with alpha 1 and beta 0 (the emulation's GEMM, and the tests' model of cuBLAS), after
/// the argument checks with which cuBLAS refuses a call (CUBLAS_STATUS_INVALID_VALUE).
template <class T> void reference_gemm(const GemmCall& call, const T* a, const T* b, T* c) {
  if (call.m < 0 || call.n < 0 || call.k < 0 || call.batch < 0 ||
      call.lda < std::max<int64_t>(1, call.trans_a ? call.k : call.m) ||
      call.ldb < std::max<int64_t>(1, call.trans_b ? call.n : call.k) || call.ldc < std::max<int64_t>(1, call.m))
    detail::fail<Error>("dot_general", "internal: invalid GEMM arguments m=", call.m, " n=", call.n, " k=", call.k,
                        " lda=", call.lda, " ldb=", call.ldb, " ldc=", call.ldc, " batch=", call.batch,
                        " (cuBLAS would refuse them).");
  for (int64_t batch = 0; batch < call.batch; ++batch) {
    const T* A = a + batch * call.stride_a;
    const T* B = b + batch * call.stride_b;
    T* C = c + batch * call.stride_c;
    for (int64_t j = 0; j < call.n; ++j)
      for (int64_t i = 0; i < call.m; ++i) {
        T acc = T(0);
        for (int64_t p = 0; p < call.k; ++p) {
          T av = call.trans_a ? A[p + i * call.lda] : A[i + p * call.lda];
          T bv = call.trans_b ? B[j + p * call.ldb] : B[p + j * call.ldb];
          acc += av * bv;
        }
        C[i + j * call.ldc] = acc;
      }
  }
}

/// The cuda_emulated backend's launch policy: CUDA kernel bodies over their grid on the CPU.
struct EmulatedExec {
  static constexpr Backend backend = Backend::cuda_emulated;

  template <class F> static void for_each(fx_index n, const F& body) {
    const fx_index blocks = (n + kBlockThreads - 1) / kBlockThreads;
    for (fx_index b = blocks - 1; b >= 0; --b) {
      const fx_index end = std::min(n, (b + 1) * kBlockThreads);
      for (fx_index i = b * kBlockThreads; i < end; ++i) body(i);
    }
  }

  static void to_host(void* dst, const void* src, int64_t bytes, Device) {
    if (bytes > 0) std::memcpy(dst, src, static_cast<size_t>(bytes));
  }

  static void gemm(const GemmCall& call, DType dtype, const void* a, const void* b, void* c) {
    if (dtype == f32)
      reference_gemm(call, static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(c));
    else if (dtype == f64)
      reference_gemm(call, static_cast<const double*>(a), static_cast<const double*>(b), static_cast<double*>(c));
    else detail::fail<DTypeError>("dot_general", "the GEMM runs f32 and f64, got ", dtype, ".");
  }
};

}  // namespace fluxion::cuda
