// make_fused_step: one walk over the group's members assigning operands to externals, scratch
// slots (recycled after their last reader) and row reads; then the flags the block loop reads.
#include "runtime/fused_step.hpp"

#include "runtime/backend.hpp"

namespace fluxion::runtime {

Step make_fused_step(const Jaxpr& j, const std::vector<int32_t>& group, const std::vector<int32_t>& uses_outside,
                     const Lowering& lowering, GroupVars& vars) {
  Step step;
  step.type = Step::fused;
  for (int32_t eq : group) step.group.push_back(&j.equations[eq]);
  const Equation& first = j.equations[group.front()];
  step.n = j.avals[first.outputs[0]].shape.num_elements();
  // Tables by group variable (GroupVars): their size is the group's, whatever the Jaxpr's.
  vars.assign(j, group);
  step.members.reserve(group.size());  // members are large: no doubling past the group's size
  std::vector<int32_t> slot_of(vars.size(), -1);
  std::vector<int32_t> external_index(vars.size(), -1);
  // Last member reading each group-internal value, to recycle scratch slots.
  std::vector<int32_t> last_read(vars.size(), -1);
  for (size_t m = 0; m < group.size(); ++m)
    for (const Atom& a : j.equations[group[m]].inputs)
      if (!a.is_literal()) last_read[vars[a.var]] = static_cast<int32_t>(m);
  std::vector<bool> in_group(vars.size(), false);
  for (int32_t eq : group) in_group[vars[j.equations[eq].outputs[0]]] = true;
  std::vector<int32_t> free_slots;
  auto external = [&](int32_t v) {
    int32_t& index = external_index[vars[v]];
    if (index < 0) {
      index = static_cast<int32_t>(step.externals.size());
      step.externals.push_back(v);
    }
    return index;
  };
  const RowReads rows = fused_row_reads(j, group, vars, lowering);
  for (size_t m = 0; m < group.size(); ++m) {
    const Equation& e = j.equations[group[m]];
    // A broadcast whose readers all read its rows, in the group only, never runs.
    if (const int32_t v = e.outputs[0]; rows.row[vars[v]] > 0 && !rows.full[vars[v]] && !uses_outside[v]) {
      ++step.row_broadcasts;
      continue;
    }
    FusedMember member;
    member.eqn = &e;
    member.in_dtype = j.aval_of(e.inputs[0]).dtype;
    member.out_dtype = j.avals[e.outputs[0]].dtype;
    if (const std::optional<FusedReduction> layout = fusible_reduction(j, e); layout && m > 0) {
      member.reduce = true;
      member.layout = *layout;
      member.acc = step.accumulators;
      step.accumulators += layout->outputs;
    } else if (is_fusible_broadcast(j, e)) {
      member.broadcast = true;
      broadcast_layout(j, e, member.bdims, member.bsrc);
      if (member.bdims.size() == 2 && member.bsrc[0] == 0 && member.bsrc[1] == 1) member.period = member.bdims[1];
    }
    for (const Atom& a : e.inputs) {
      FusedOperand op;
      const AbstractValue& av = j.aval_of(a);
      op.itemsize = itemsize_of(av.dtype);
      op.scalar = av.shape.size() == 0 && step.n != 1;
      const int32_t local = a.is_literal() ? -1 : vars[a.var];
      if (a.is_literal()) {
        op.source = FusedOperand::literal;
        op.scalar = true;
        op.literal_ptr = a.literal.array().data();
      } else if (rows.member_rows[m] && rows.row[local] > 0) {
        op.source = FusedOperand::rows;
        op.index = external(rows.source[local]);
        op.row = member.row = rows.row[local];
      } else if (in_group[local] && slot_of[local] >= 0) {
        op.source = FusedOperand::scratch;
        op.index = slot_of[local];
      } else {
        op.source = FusedOperand::external;
        op.index = external(a.var);
      }
      member.scalar[member.num_inputs] = op.scalar;
      member.inputs[member.num_inputs++] = op;
    }
    // Free scratch slots whose last reader is this member. The output may take one (members
    // read a block before writing it), unless its elements are wider than the input's: a
    // widening conversion in place would overwrite input elements not read yet.
    int32_t out = e.outputs[0];
    member.output.itemsize = itemsize_of(j.avals[out].dtype);
    std::vector<int32_t> freed_after;
    for (const Atom& a : e.inputs)
      if (!a.is_literal() && slot_of[vars[a.var]] >= 0 && last_read[vars[a.var]] == static_cast<int32_t>(m)) {
        const bool widens = member.output.itemsize > itemsize_of(j.aval_of(a).dtype);
        (widens ? freed_after : free_slots).push_back(slot_of[vars[a.var]]);
        slot_of[vars[a.var]] = -1;
      }
    // Past kMaxScratchSlots, only values smaller than a block spill: a larger one costs more
    // written out whole than a slot of one block per thread.
    const bool slot_free = !free_slots.empty() || step.scratch_slots < kMaxScratchSlots || step.n >= kBlock;
    if (uses_outside[out] || member.reduce || !slot_free) {
      member.output.source = FusedOperand::external;
      member.output.index = external(out);
      // Later members read it back from the external buffer.
    } else {
      member.output.source = FusedOperand::scratch;
      if (free_slots.empty()) {
        member.output.index = step.scratch_slots++;
      } else {
        member.output.index = free_slots.back();
        free_slots.pop_back();
      }
      slot_of[vars[out]] = member.output.index;
    }
    free_slots.insert(free_slots.end(), freed_after.begin(), freed_after.end());
    step.members.push_back(std::move(member));
  }
  for (const FusedMember& m : step.members)
    if (((m.broadcast && m.bsrc.back() == 0) || m.row > 0) && m.output.source == FusedOperand::scratch)
      step.track_uniform = true;
  step.track_uniform = step.track_uniform && step.n > 1 && step.scratch_slots <= kMaxUniformSlots;
  for (const FusedMember& m : step.members)
    step.periodic_views = step.periodic_views || (m.period > 0 && m.output.source == FusedOperand::scratch);
  step.periodic_views = step.periodic_views && step.scratch_slots <= kMaxUniformSlots;
  return step;
}

bool parallel_single(const Jaxpr& j, const Equation& e, const Lowering& lowering) {
  return lowering.runs_side_by_side() && max_threads() > 1 && e.primitive->traits.elementwise &&
         !e.primitive->traits.view && e.outputs.size() == 1 &&
         j.avals[e.outputs[0]].shape.num_elements() >= kParallelElements && fusible(j, e, lowering);
}

}  // namespace fluxion::runtime
