/// The collective primitives' handles and params (defined in collectives.cpp; their kernels, shared by every
/// backend, in collectives_kernels.cpp). A collective names an axis: inside the vmap that binds that name it
/// is ordinary array work across the batch axis (collective_batch rules); outside, its kernel moves bytes
/// through the transport of the process group registered under the name (backends/distributed/transport.hpp).
#pragma once
#include <string>
#include <tuple>

#include "fluxion/primitive.hpp"

namespace fluxion::primitives::collectives_detail {

/// all_sum, all_mean, all_max, all_min, pvary, axis_index. `axis_size` is the size of the named axis when
/// the collective was bound (the vmap's size or the group's); all_mean divides by it, and a kernel checks
/// that the group it runs on still has that size.
struct NamedAxisParams final : ParamsOf<NamedAxisParams> {
  std::string axis_name;
  int64_t axis_size = 0;
  NamedAxisParams(std::string name, int64_t size) : axis_name(std::move(name)), axis_size(size) {}
  auto fields() const { return std::tie(axis_name, axis_size); }
  static constexpr const char* names[] = {"axis_name", "axis_size"};
};

/// all_gather (the gathered axis goes to `axis`: a new axis of size axis_size, or, tiled, `axis` grows
/// axis_size times) and reduce_scatter (`axis` has axis_size blocks, this rank keeps its own: removed, or,
/// tiled, shrunk axis_size times).
struct GatherParams final : ParamsOf<GatherParams> {
  std::string axis_name;
  int64_t axis_size = 0;
  int64_t axis = 0;
  bool tiled = false;
  GatherParams(std::string name, int64_t size, int64_t a, bool t)
      : axis_name(std::move(name)), axis_size(size), axis(a), tiled(t) {}
  auto fields() const { return std::tie(axis_name, axis_size, axis, tiled); }
  static constexpr const char* names[] = {"axis_name", "axis_size", "axis", "tiled"};
};

/// all_to_all: `split_axis` cut into axis_size blocks, block r sent to rank r; the blocks received are
/// concatenated along `concat_axis` in rank order.
struct AllToAllParams final : ParamsOf<AllToAllParams> {
  std::string axis_name;
  int64_t axis_size = 0;
  int64_t split_axis = 0;
  int64_t concat_axis = 0;
  AllToAllParams(std::string name, int64_t size, int64_t split, int64_t concat)
      : axis_name(std::move(name)), axis_size(size), split_axis(split), concat_axis(concat) {}
  auto fields() const { return std::tie(axis_name, axis_size, split_axis, concat_axis); }
  static constexpr const char* names[] = {"axis_name", "axis_size", "split_axis", "concat_axis"};
};

/// broadcast: every rank receives rank `root`'s operand.
struct BroadcastParams final : ParamsOf<BroadcastParams> {
  std::string axis_name;
  int64_t axis_size = 0;
  int64_t root = 0;
  BroadcastParams(std::string name, int64_t size, int64_t r) : axis_name(std::move(name)), axis_size(size), root(r) {}
  auto fields() const { return std::tie(axis_name, axis_size, root); }
  static constexpr const char* names[] = {"axis_name", "axis_size", "root"};
};

const Primitive& all_sum_p();
const Primitive& all_mean_p();
const Primitive& all_max_p();
const Primitive& all_min_p();
const Primitive& pvary_p();  // identity on every rank; the transpose of all_sum (and all_sum its transpose)
const Primitive& all_gather_p();
const Primitive& reduce_scatter_p();
const Primitive& all_to_all_p();
const Primitive& broadcast_p();
const Primitive& axis_index_p();

enum class CollectiveOp { sum, mean, max, min, pvary, gather, scatter, to_all, broadcast, index };
/// The kernel of each collective, the same on every backend: host memory goes through MPI, device memory
/// through NCCL (the transport picks by the tensors' device). Instantiated in collectives_kernels.cpp.
template <CollectiveOp Op>
void collective_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out);

}  // namespace fluxion::primitives::collectives_detail
