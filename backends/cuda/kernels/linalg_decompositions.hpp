/// The linalg_decompositions family's kernels in the CUDA kernel table (lu, qr, expm, expm_frechet;
/// det, slogdet and matrix_power are compositions). All four are host-staged: the CPU kernel runs on
/// host copies (factorizations are sequential per matrix; a cuSOLVER getrf/geqrf path would replace
/// lu and qr's).
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/host_staged.hpp"
#include "primitives/linalg_decompositions.hpp"
#include "runtime/backend.hpp"

namespace fluxion::cuda {

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_linalg_decompositions_kernels() {
  using namespace primitives::decomp_detail;
  runtime::set_kernel(lu_p(), Exec::backend, &host_staged_kernel<&lu_p>);
  runtime::set_kernel(qr_p(), Exec::backend, &host_staged_kernel<&qr_p>);
  runtime::set_kernel(expm_p(), Exec::backend, &host_staged_kernel<&expm_p>);
  runtime::set_kernel(expm_frechet_p(), Exec::backend, &host_staged_kernel<&expm_frechet_p>);
}

}  // namespace fluxion::cuda
