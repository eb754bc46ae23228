/// The linalg_spectral family's kernels in the CUDA kernel table (eigh, svd): host-staged (the CPU
/// kernel on host copies, host_staged.hpp) until they have cuSOLVER paths (syevd, gesvd), so every
/// backend returns the same vectors under the shared sign and completion conventions.
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/host_staged.hpp"
#include "primitives/linalg_spectral.hpp"
#include "runtime/backend.hpp"

namespace fluxion::cuda {

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_linalg_spectral_kernels() {
  using namespace primitives::spectral_detail;
  runtime::set_kernel(eigh_p(), Exec::backend, &host_staged_kernel<&eigh_p>);
  runtime::set_kernel(svd_p(), Exec::backend, &host_staged_kernel<&svd_p>);
}

}  // namespace fluxion::cuda
