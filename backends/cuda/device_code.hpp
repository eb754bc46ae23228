/// Code that three compilers read: g++ (the cuda_emulated backend, and the CPU's scalar forms),
/// nvcc (the CUDA kernels) and NVRTC (jit's generated kernels). A function marked FLUXION_HD is
/// one text compiled for host and device, so the CPU and GPU formulas cannot drift apart.
///
/// Rules for everything included from here: no standard-library headers under NVRTC (guard them
/// with FLUXION_NVRTC), C math names with their float forms (sinf/sin, not std::sin), and index
/// arithmetic in fx_index (64 bits: tensors may exceed 2^31 elements).
#pragma once

#if defined(__CUDACC_RTC__)
#define FLUXION_NVRTC 1
#endif

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FLUXION_HD __host__ __device__
#define FLUXION_DEVICE_COMPILER 1
#else
#define FLUXION_HD
#endif

#if !defined(FLUXION_NVRTC)
#include <cstdint>
#endif

namespace fluxion::cuda {

#if defined(FLUXION_NVRTC)
using fx_index = long long;
#else
using fx_index = int64_t;
#endif

/// Dims beyond which a strided kernel refuses a tensor (after merging contiguous dims); the
/// refusal is a NotImplementedError naming the op and the rank.
inline constexpr int kMaxKernelRank = 12;

}  // namespace fluxion::cuda
