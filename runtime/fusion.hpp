/// Elementwise fusion: groups chains of elementwise equations into one pass over blocks.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "fluxion/jaxpr.hpp"

namespace fluxion::runtime {
class Lowering;
}

namespace fluxion::runtime {

/// The execution order of `jaxpr`'s equations as steps: each step lists equation indices, one
/// for a plain kernel call, several for a fused group. A group holds equations the backend fuses
/// (`lowering`) with the same output shape (rank-0 operands broadcast); each of its members runs
/// after its inputs, and every equation reading a group's value runs after the group.
std::vector<std::vector<int32_t>> fuse_elementwise(const Jaxpr& jaxpr, const Lowering& lowering);

/// True when `e` is a broadcast_in_dim of a non-scalar variable (a fused group computes it per
/// block from the operand instead of materialising it; along trailing dims, members with a row
/// kernel read the operand per row and the block is not computed at all).
bool is_fusible_broadcast(const Jaxpr& jaxpr, const Equation& e);

/// How a reduce_sum a fused group can end with maps input elements (row-major index i) to its
/// outputs when it reduces one run of adjacent dims: output (i / (row * inner)) * inner + i % inner,
/// `inner` being the elements of the dims after the reduced ones (1: trailing dims reduced,
/// output i / row; `outputs`: leading dims reduced, output i % outputs). Floating dtypes only, at
/// least 2 elements per output.
struct FusedReduction {
  int64_t outputs = 0, row = 0;  // row: input elements per output
  int64_t inner = 1;
};
/// The layout of `e` when it is such a reduce_sum, else nullopt.
std::optional<FusedReduction> fusible_reduction(const Jaxpr& jaxpr, const Equation& e);

/// True when equation `e` may join a fused group of a backend lowering as `lowering` does.
bool fusible(const Jaxpr& jaxpr, const Equation& e, const Lowering& lowering);

/// The layout of broadcast_in_dim `e`: the operand's element stride per output dim (0 where
/// broadcast), size-1 dims dropped and neighbours that stay contiguous merged (at least one dim).
void broadcast_layout(const Jaxpr& jaxpr, const Equation& e, std::vector<int64_t>& dims, std::vector<int64_t>& src);

/// How a fused group reads its broadcasts along trailing dims (one value per run of `row`
/// elements, run r reading operand element r): members whose primitive the backend fuses by rows
/// (Lowering::fuses_rows) read the operand per run. The runner still runs the broadcast when a member needs its
/// block (`full`) or it is read outside the group.
struct RowReads {
  std::vector<int64_t> row;       // by group variable (GroupVars): the run length of such a broadcast, else 0
  std::vector<int32_t> source;    // by group variable: that broadcast's operand (a Jaxpr variable)
  std::vector<bool> full;         // by group variable: some member of the group reads its block
  std::vector<bool> member_rows;  // by group position: the member reads its row operands per run
};

/// Dense ids 0..size()-1 for the variables one fusion group reads or defines, so that the tables
/// of a group cost the group's size, not the whole Jaxpr's (planning stays linear in equations).
/// Made once per plan and re-assigned per group: assign() clears only the previous group's ids.
class GroupVars {
 public:
  explicit GroupVars(size_t num_vars) : local_(num_vars, -1) {}
  void assign(const Jaxpr& jaxpr, const std::vector<int32_t>& group);
  /// The id of `var`, a variable of the group.
  int32_t operator[](int32_t var) const { return local_[static_cast<size_t>(var)]; }
  size_t size() const { return vars_.size(); }

 private:
  std::vector<int32_t> local_;  // by Jaxpr variable: its id in the group, or -1
  std::vector<int32_t> vars_;   // by id: the Jaxpr variable
};

/// RowReads of fused group `group` (equation indices), by the group's variables `vars`.
RowReads fused_row_reads(const Jaxpr& jaxpr, const std::vector<int32_t>& group, const GroupVars& vars,
                         const Lowering& lowering);

}  // namespace fluxion::runtime
