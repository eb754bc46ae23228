/// The indexing and data-movement kernels of the CUDA backend: one strided-index family
/// (indexing_copy.hpp: reshape, squeeze, expand_dims, broadcast_in_dim, transpose, slice,
/// dynamic_slice, dynamic_update_slice, concatenate), pad and iota (indexing_pad.hpp), gather and
/// scatter_add (indexing_gather.hpp).
#pragma once
#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"
#include "backends/cuda/kernels/indexing_copy.hpp"
#include "backends/cuda/kernels/indexing_gather.hpp"
#include "backends/cuda/kernels/indexing_pad.hpp"
#include "primitives/indexing.hpp"
#include "primitives/shape.hpp"

namespace fluxion::cuda {

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_indexing_kernels() {
  namespace sf = primitives::shape_family;
  namespace ix = primitives::indexing_family;
  using runtime::set_kernel;
  constexpr Backend b = Exec::backend;
  // The views' kernels (eager evaluation shares the operand's buffer; plans may still copy).
  set_kernel(sf::reshape_p(), b, &copy_kernel<Exec>);
  set_kernel(sf::squeeze_p(), b, &copy_kernel<Exec>);
  set_kernel(sf::expand_dims_p(), b, &copy_kernel<Exec>);
  set_kernel(sf::broadcast_in_dim_p(), b, &broadcast_in_dim_kernel<Exec>);
  set_kernel(sf::transpose_p(), b, &transpose_kernel<Exec>);
  set_kernel(ix::slice_p(), b, &slice_kernel<Exec>);
  set_kernel(ix::dynamic_slice_p(), b, &dynamic_slice_kernel<Exec>);
  set_kernel(ix::dynamic_update_slice_p(), b, &dynamic_update_slice_kernel<Exec>);
  set_kernel(ix::concatenate_p(), b, &concatenate_kernel<Exec>);
  set_kernel(ix::pad_p(), b, &pad_kernel<Exec>);
  set_kernel(ix::iota_p(), b, &iota_kernel<Exec>);
  set_kernel(ix::gather_p(), b, &gather_kernel<Exec>);
  set_kernel(ix::scatter_add_p(), b, &scatter_add_kernel<Exec>);
}

}  // namespace fluxion::cuda
