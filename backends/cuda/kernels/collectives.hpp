/// The collectives' kernels in the CUDA kernel table: the same kernels as the CPU's (primitives/collectives.hpp),
/// which hand device buffers to the transport (NCCL on the device's stream) and reorder blocks with device copies.
#pragma once
#include "backends/cuda/exec.hpp"
#include "primitives/collectives.hpp"
#include "runtime/backend.hpp"

namespace fluxion::cuda {

template <class Exec> void install_collectives_kernels() {
  using namespace primitives::collectives_detail;
  runtime::set_kernel(all_sum_p(), Exec::backend, &collective_kernel<CollectiveOp::sum>);
  runtime::set_kernel(all_mean_p(), Exec::backend, &collective_kernel<CollectiveOp::mean>);
  runtime::set_kernel(all_max_p(), Exec::backend, &collective_kernel<CollectiveOp::max>);
  runtime::set_kernel(all_min_p(), Exec::backend, &collective_kernel<CollectiveOp::min>);
  runtime::set_kernel(pvary_p(), Exec::backend, &collective_kernel<CollectiveOp::pvary>);
  runtime::set_kernel(all_gather_p(), Exec::backend, &collective_kernel<CollectiveOp::gather>);
  runtime::set_kernel(reduce_scatter_p(), Exec::backend, &collective_kernel<CollectiveOp::scatter>);
  runtime::set_kernel(all_to_all_p(), Exec::backend, &collective_kernel<CollectiveOp::to_all>);
  runtime::set_kernel(broadcast_p(), Exec::backend, &collective_kernel<CollectiveOp::broadcast>);
  runtime::set_kernel(axis_index_p(), Exec::backend, &collective_kernel<CollectiveOp::index>);
}

}  // namespace fluxion::cuda
