/// install_kernel_table<Exec>(): files every family's kernels under Exec::backend. Included only by
/// the two table files (kernel_table.cu with CudaExec, emulated/kernel_table.cpp with EmulatedExec).
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/control_flow.hpp"
#include "backends/cuda/kernels/elementwise.hpp"
#include "backends/cuda/kernels/indexing.hpp"
#include "backends/cuda/kernels/products.hpp"
#include "backends/cuda/kernels/reductions.hpp"
#include "backends/cuda/kernels/linalg_triangular.hpp"
#include "backends/cuda/kernels/linalg_decompositions.hpp"
#include "backends/cuda/kernels/linalg_spectral.hpp"
#include "backends/cuda/kernels/random.hpp"
#include "backends/cuda/kernels/sort.hpp"
#include "backends/cuda/kernels/scatter.hpp"
#include "backends/cuda/kernels/convolution.hpp"
#include "backends/cuda/kernels/collectives.hpp"

namespace fluxion::cuda {

template <class Exec> void install_kernel_table() {
  install_elementwise_kernels<Exec>();
  install_indexing_kernels<Exec>();
  install_reduction_kernels<Exec>();
  install_product_kernels<Exec>();
  install_control_flow_kernels<Exec>();
  install_linalg_triangular_kernels<Exec>();
  install_linalg_decompositions_kernels<Exec>();
  install_linalg_spectral_kernels<Exec>();
  install_random_kernels<Exec>();
  install_sort_kernels<Exec>();
  install_scatter_kernels<Exec>();
  install_convolution_kernels<Exec>();
  install_collectives_kernels<Exec>();
}

}  // namespace fluxion::cuda
