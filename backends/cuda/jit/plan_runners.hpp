/// The CUDA jit's plan runners (runtime/backend.hpp's seam). Both plan with one lowering slot
/// (elementwise equations with a shared scalar functor, broadcast_in_dim and the reduce_sums ending
/// a group fuse: fused_kernel.hpp) and run fused steps as generated kernels:
///  - the CUDA runner (Backend::cuda, registered in runtime/backend.cpp when CUDA is compiled):
///    kernels compiled by NVRTC, loaded and launched through the driver API on the device's stream;
///    kernel steps call the CUDA kernel table.
///  - the emulated runner, for machines without a GPU: the same generated sources compiled by the
///    host compiler (host_compiler.hpp) and run over their grid on the CPU, on CPU tensors; kernel
///    steps call the cuda_emulated kernel table, or the CPU's kernel where a primitive has no
///    emulated one yet (counted: EmulationCounts). Tests swap it in for the CPU's runner.
#pragma once
#include "runtime/backend.hpp"

namespace fluxion::cuda::jit {

/// The lowering slot of both runners.
const runtime::Lowering& fused_lowering();

/// The CUDA runner.
const runtime::PlanRunner& cuda_plan_runner();

/// The emulated runner.
const runtime::PlanRunner& emulated_plan_runner();

/// What the emulated runner did in this process (tests print it).
struct EmulationCounts {
  int fused_launches = 0;         // generated kernels run
  int emulated_kernel_steps = 0;  // kernel steps lowered to a cuda_emulated kernel
  int cpu_kernel_steps = 0;       // ... left on the CPU's kernel (no cuda_emulated kernel yet)
};
EmulationCounts emulation_counts();

}  // namespace fluxion::cuda::jit
