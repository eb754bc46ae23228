/// The emulated runner's compiler: a generated kernel source (fused_kernel.hpp) compiled by the host
/// C++ compiler through an emulation header (CUDA's keywords and thread indices on the CPU) into a
/// shared library, loaded with dlopen. The kernel text is exactly what NVRTC compiles, so the
/// emulated runner tests the generated code's logic where there is no GPU.
#pragma once
#include <string>

#include "backends/cuda/jit/fused_kernel.hpp"

namespace fluxion::cuda::jit {

/// The emulation entry of `kernel` (emulation_entry): runs the kernel over a grid of `grid` blocks
/// of `block` threads with the kernelParams array `args`.
using EmulatedEntry = void (*)(unsigned grid, unsigned block, void** args);

/// Compiles `kernel` for the host (once per kernel name in a process) and returns its entry. The
/// compiler is $FLUXION_JIT_HOST_CXX, else the one that built Fluxion, with -std=c++17 -pthread -O1
/// -ffp-contract=off (one rounding per operation, as Fluxion's own CPU code). A failing compile is
/// a fluxion::Error with the compiler's output.
EmulatedEntry compile_for_host(const FusedKernel& kernel);

/// The emulation header put before a kernel's source (exposed for tests).
const char* emulation_header();

/// How many host compiles this process ran.
int host_compile_count();

}  // namespace fluxion::cuda::jit
