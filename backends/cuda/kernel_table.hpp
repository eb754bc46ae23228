/// The kernel tables of the CUDA backend (Backend::cuda, nvcc: kernel_table.cu) and of its CPU
/// emulation (Backend::cuda_emulated, g++: emulated/kernel_table.cpp): one list of kernels, written
/// once against a launch policy (exec.hpp), filed for every primitive under the policy's backend.
/// The rule suite runs the emulated table against the reference kernels in CI
/// (tests/test_cuda_emulated.cpp); bench/gpu_check.sh runs the CUDA one on a GPU.
#pragma once

namespace fluxion::cuda {

/// Files the cuda_emulated kernel of every primitive (runtime::ensure_kernel_table calls it once).
void install_emulated_kernels();
/// Files the CUDA kernel of every primitive (kernel_table.cu, in fluxion::cuda only; the core reaches it
/// through the backend hooks: backend_hooks.hpp).
void install_cuda_kernels();

}  // namespace fluxion::cuda
