/// A fused step of a plan as one generated CUDA C++ kernel: a grid-stride loop computing every
/// member of the step per element with the shared scalar functors (shared_functors.hpp), reading
/// the step's inputs once and writing only the values read outside the step. A broadcast_in_dim
/// member reads its operand through its index map (element i's coordinates times the operand's
/// strides). A step ending in sums loops over the sums' outputs instead: one thread per output
/// computes the members for each element of that output's run and adds them up in order (one loop
/// per distinct sum layout; the first one also stores the values read outside the step). The same source is
/// compiled by NVRTC for the GPU (nvrtc_compiler.hpp) and by the host compiler for the emulated
/// runner (host_compiler.hpp).
///
/// Kernel signature: `extern "C" __global__ void <name>(fx_index n, <params>...)`, one parameter
/// per FusedKernel::params entry in order. A launch passes a `void* args[]` of pointers to each
/// argument (the driver API's kernelParams); the emulated entry takes the same array. Literals are
/// parameters and `n` is one, so a kernel serves every constant and size of its structure.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.hpp"

namespace fluxion::cuda::jit {

/// One kernel parameter after `n`: the base pointer of a step external, or a literal by value.
struct FusedKernelParam {
  enum Kind : uint8_t { external, literal } kind = external;
  int32_t external_index = -1;  // external: position in Step::externals
  DType dtype = f32;
  bool written = false;       // external: the kernel stores into it (else reads it)
  bool scalar = false;        // external: a rank-0 input broadcast over the step (read once)
  uint64_t literal_bits = 0;  // literal: its value's bytes at the start (dtype_size(dtype) of them)
};

/// The kernel of one fused step.
struct FusedKernel {
  // "fx_fused_" + the source's 64-bit FNV-1a hash in hex; the caches key on it and do not check
  // for collisions (2^-64 per pair of kernels).
  std::string name;
  std::string source;  // the whole translation unit NVRTC compiles
  std::vector<FusedKernelParam> params;
  int64_t n = 0;  // elements of the step
  // Work items spread over the launch's threads (fused_grid): n, or for a step ending in sums the
  // most outputs of one sum layout.
  int64_t items = 0;
  // Some sums are added up by a block per output: the kernel synchronizes its blocks' threads
  // (__syncthreads) and must be launched with kFusedBlockThreads threads per block.
  bool block_sums = false;
};

/// True when equations of `p` can be members of a generated kernel: elementwise primitives with a
/// shared scalar functor.
bool generates(const Primitive& p);

/// The kernel of fused step `step` of a plan of `j`. Every member is an elementwise equation of a
/// primitive that generates(), a broadcast_in_dim or a reduce_sum ending the step (what the CUDA
/// lowering fuses); row reads and tiled products (not planned by it) are a NotImplementedError.
FusedKernel generate_fused_kernel(const Jaxpr& j, const runtime::Step& step);

/// The emulated runner's host entry for `kernel`: `extern "C" void <name>_emulate(unsigned grid,
/// unsigned block, void** args)` running the kernel's threads over the grid on the calling thread
/// (blocks from the last down, as EmulatedExec does). Appended to the source after the emulation
/// header (host_compiler.hpp); never part of what NVRTC compiles.
std::string emulation_entry(const FusedKernel& kernel);

/// Writes `text`, a kernel source that failed to compile, to $TMPDIR (or /tmp) as `file_name` and
/// returns the path, or "" when it cannot: compile errors name it, since their logs cite its lines.
std::string keep_failed_source(const std::string& file_name, const std::string& text);

/// Threads per block of a fused kernel launch (a power of two: block sums halve it).
inline constexpr int64_t kFusedBlockThreads = 256;
/// Sums over runs at least this long into fewer outputs than kBlockSumOutputs are added up by a
/// block per output; the others by a thread per output.
inline constexpr int64_t kBlockSumRun = 2 * kFusedBlockThreads;
inline constexpr int64_t kBlockSumOutputs = 1 << 16;
/// Blocks of a launch over `n` elements: one thread per element up to `max_blocks` blocks, beyond
/// which threads stride over the elements.
inline uint32_t fused_grid(int64_t n, int64_t max_blocks) {
  const int64_t blocks = (n + kFusedBlockThreads - 1) / kFusedBlockThreads;
  return static_cast<uint32_t>(blocks < 1 ? 1 : blocks < max_blocks ? blocks : max_blocks);
}

/// A lowered fused step (Step::lowering) of either runner: its kernel and the argument array each
/// call fills (`args` points into per-state storage, see FusedArgs).
struct FusedStepLowering : runtime::StepLowering {
  FusedKernel kernel;
  const void* function = nullptr;  // CUfunction (CUDA runner) or the emulated entry
  uint32_t grid = 1;               // blocks of kFusedBlockThreads per launch (fused_grid)
};

/// A call's arguments of one fused kernel: `n`, the externals' base pointers and the literals,
/// and the kernelParams array pointing at them. Lives in a runner's workspace, reused per call.
struct FusedArgs {
  int64_t n = 0;
  std::vector<void*> pointers;   // by param (externals)
  std::vector<uint64_t> values;  // by param (literals)
  std::vector<void*> args;       // 1 + params: &n, then &pointers[k] or &values[k]
  /// Sizes the arrays for `kernel`, sets the literals and points args at them (no allocation when
  /// they are large enough already).
  void prepare(const FusedKernel& kernel);
  /// Sets the externals' base pointers from the state's values.
  void bind(const FusedKernel& kernel, const runtime::Step& step, const runtime::RunState& s);
};

}  // namespace fluxion::cuda::jit
