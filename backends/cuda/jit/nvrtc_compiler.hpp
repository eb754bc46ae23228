/// NVRTC: generated kernel sources to PTX, without a GPU or a driver. Compiled PTX is cached by
/// (source hash, architecture, NVRTC version) in memory and, when FLUXION_CUDA_CACHE_DIR names a
/// directory, on disk, so a process or a later one compiles each kernel once.
#pragma once
#include <string>
#include <vector>

namespace fluxion::cuda::jit {

/// The PTX of `source`, whose kernel is named `name` (a hash of the source: fused_kernel.hpp), for
/// virtual architecture compute_<arch> (80: compute_80). Options: -default-device, -std=c++17, and
/// --fmad=false (one rounding per operation, as the CPU's -ffp-contract=off). A compile error is a
/// fluxion::Error carrying NVRTC's log and the kernel name.
std::string compile_to_ptx(const std::string& source, const std::string& name, int arch);

/// The architectures this NVRTC compiles for (52, 60, ..., 90, ...), ascending.
std::vector<int> nvrtc_architectures();

/// The newest architecture NVRTC supports that a device of compute capability `major`.`minor` runs
/// (its PTX is compiled by the driver for the device); throws DeviceError when there is none.
int architecture_for_device(int major, int minor);

/// "major.minor" of the linked NVRTC.
std::string nvrtc_version();

/// How many NVRTC compiles this process ran (tests check that the caches spare them).
int nvrtc_compile_count();

/// Empties the in-memory cache (tests of the disk cache; loaded kernels are not affected).
void forget_compiled_ptx();

}  // namespace fluxion::cuda::jit
