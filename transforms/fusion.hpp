/// Elementwise fusion: groups chains of elementwise equations into one pass over blocks.
#pragma once
#include <cstdint>
#include <optional>
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

/// How a reduce_sum a fused group can end with maps input elements (row-major index i) to its
/// outputs: trailing dims reduced, output i / row; or leading dims reduced (`columns`), output
/// i % outputs. Floating dtypes only, at least 2 elements per output.
struct FusedReduction {
  int64_t outputs = 0, row = 0;  // row: input elements per output
  bool columns = false;
};
/// The layout of `e` when it is such a reduce_sum, else nullopt.
std::optional<FusedReduction> fusible_reduction(const Jaxpr& jaxpr, const Equation& e);

/// True when equation `e` may join a fused group on `backend`.
bool fusible(const Jaxpr& jaxpr, const Equation& e, Backend backend);

}  // namespace fluxion
