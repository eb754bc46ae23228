/// Elementwise fusion: groups chains of elementwise equations into one pass over blocks.
#pragma once
#include <cstdint>
#include <vector>

#include "fluxion/jaxpr.hpp"

namespace fluxion {

/// The execution order of `jaxpr`'s equations as steps: each step lists equation indices, one
/// for a plain kernel call, several for a fused group. A group holds elementwise equations with a
/// block kernel and the same output shape (rank-0 operands broadcast); each of its members runs
/// after its inputs, and every equation reading a group's value runs after the group.
std::vector<std::vector<int32_t>> fuse_elementwise(const Jaxpr& jaxpr, Backend backend);

/// True when `e` is a broadcast_in_dim of a non-scalar variable (a fused group computes it per
/// block from the operand instead of materialising it).
bool is_fusible_broadcast(const Jaxpr& jaxpr, const Equation& e);

/// The number of input elements per output element when `e` is a reduce_sum a fused group can
/// end with (floating dtype, the trailing dims reduced, at least 2 elements per output), else 0.
int64_t fusible_reduction_row(const Jaxpr& jaxpr, const Equation& e);

/// True when equation `e` may join a fused group on `backend`.
bool fusible(const Jaxpr& jaxpr, const Equation& e, Backend backend);

}  // namespace fluxion
