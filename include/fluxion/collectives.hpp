/// Collectives over named axes (fx::all_sum and the others): across the mapped axis of an enclosing
/// fx::vmap(..., fx::axis_name(n)), or across the processes of a group registered under n
/// (fx::distributed::init). The same function runs either way, so collective code can be tested in one
/// process. Inside the vmap, results that every member holds alike (all_sum, all_mean, all_max, all_min,
/// broadcast, all_gather) come back unmapped. Derivatives follow jax.shard_map's pairs (primitives/collectives.cpp):
/// all_sum's transpose is pvary and pvary's all_sum, all_gather and reduce_scatter transpose into each
/// other, all_to_all into itself with the axes swapped.
#pragma once
#include <cstdint>
#include <string>

#include "fluxion/pytree.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion {

/// The number of members of axis `axis_name`: the enclosing vmap's batch size, or the size of the process
/// group registered under the name. Throws fluxion::Error when the name is bound to neither.
int64_t axis_size(const std::string& axis_name);
/// This member's index along the axis (i32 scalar): the position in the vmap's batch, or the rank in the group.
Tensor axis_index(const std::string& axis_name);

/// Sum (mean, maximum, minimum) of x over the members; every member gets the result. all_mean of integers
/// is computed in f64. all_max/all_min split the derivative evenly between members that tie.
Tensor all_sum(const Tensor& x, const std::string& axis_name);
Tensor all_mean(const Tensor& x, const std::string& axis_name);
Tensor all_max(const Tensor& x, const std::string& axis_name);
Tensor all_min(const Tensor& x, const std::string& axis_name);
/// Identity on every member: marks a value every member holds alike as one each member owns (the transpose
/// of all_sum; its own transpose is all_sum). Rarely needed in user code.
Tensor pvary(const Tensor& x, const std::string& axis_name);
/// The members' x stacked along a new axis `axis` (member order), or with tiled=true concatenated along
/// existing axis `axis`.
Tensor all_gather(const Tensor& x, const std::string& axis_name, int64_t axis = 0, bool tiled = false);
/// The sum over members, of which member r keeps block r along `axis`: x's axis must have one block per
/// member (size axis_size; removed) or, tiled, a multiple of axis_size (shrunk axis_size times).
Tensor reduce_scatter(const Tensor& x, const std::string& axis_name, int64_t axis = 0, bool tiled = false);
/// `split_axis` cut into axis_size blocks, block r sent to member r; the received blocks concatenated along
/// `concat_axis` in member order (JAX's all_to_all with tiled=True).
Tensor all_to_all(const Tensor& x, const std::string& axis_name, int64_t split_axis, int64_t concat_axis);
/// Member `root`'s x, on every member.
Tensor broadcast(const Tensor& x, const std::string& axis_name, int64_t root = 0);

/// What this process handed to other processes through collectives (the kernels that ran across processes,
/// not those a named vmap turned into array work): calls, and operand bytes sent. all_gather sends its operand,
/// reduce_scatter and all_to_all their whole operand, broadcast its operand on the root only.
struct CollectiveStats {
  int64_t calls = 0;
  int64_t bytes_sent = 0;
};
CollectiveStats collective_stats();
void reset_collective_stats();

/// The elementwise collectives over every leaf of a pytree (std::vector, std::map, tuples, structs).
template <class T, class = std::enable_if_t<!std::is_same_v<std::decay_t<T>, Tensor> && is_pytree_v<T>>>
T all_sum(const T& tree, const std::string& axis_name) {
  return tree_map([&](const Tensor& x) { return all_sum(x, axis_name); }, tree);
}
template <class T, class = std::enable_if_t<!std::is_same_v<std::decay_t<T>, Tensor> && is_pytree_v<T>>>
T all_mean(const T& tree, const std::string& axis_name) {
  return tree_map([&](const Tensor& x) { return all_mean(x, axis_name); }, tree);
}

}  // namespace fluxion
