/// The control flow kernels of the CUDA backend (per-index bodies and their launch wrappers).
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"

namespace fluxion::cuda {

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_control_flow_kernels() {}

}  // namespace fluxion::cuda
