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

namespace atomic_detail {
// The overloads behind fx_atomic_add: device ones (atomicAdd; 8-byte integers through unsigned long
// long, whose wrap-around is the same bits) and host ones (the emulation runs one body at a time).
// Integers wrap around (two's complement) like the reference's unsigned sums.
#if defined(__CUDA_ARCH__)
__device__ inline void add(float* p, float v) { atomicAdd(p, v); }
__device__ inline void add(double* p, double v) { atomicAdd(p, v); }
__device__ inline void add(int* p, int v) { atomicAdd(p, v); }
__device__ inline void add(long long* p, long long v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ inline void add(long* p, long v) {
  static_assert(sizeof(long) == sizeof(unsigned long long), "8-byte long expected");
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
// bool: logical or, set through the aligned 32-bit word holding the byte (no byte atomics).
__device__ inline void add(bool* p, bool v) {
  if (!v) return;
  const unsigned long long addr = reinterpret_cast<unsigned long long>(p);
  atomicOr(reinterpret_cast<unsigned int*>(addr & ~3ull), 1u << (8 * (addr & 3ull)));
}
#else
inline void add(float* p, float v) { *p += v; }
inline void add(double* p, double v) { *p += v; }
inline void add(int* p, int v) { *p = static_cast<int>(static_cast<unsigned>(*p) + static_cast<unsigned>(v)); }
inline void add(long long* p, long long v) {
  *p = static_cast<long long>(static_cast<unsigned long long>(*p) + static_cast<unsigned long long>(v));
}
inline void add(long* p, long v) {
  *p = static_cast<long>(static_cast<unsigned long>(*p) + static_cast<unsigned long>(v));
}
inline void add(bool* p, bool v) { *p = *p || v; }
#endif
}  // namespace atomic_detail

/// *p += v as one indivisible step (scatter_add's duplicate indices meet here): atomicAdd on the
/// device, a plain sum on the host. Integers wrap around; bool is logical or.
template <class T> FLUXION_HD inline void fx_atomic_add(T* p, T v) { atomic_detail::add(p, v); }

}  // namespace fluxion::cuda
