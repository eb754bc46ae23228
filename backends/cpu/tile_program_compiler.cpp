// compile_tile_program: numbers the group's values, orders the members so that chains stay in
// the accumulator, then emits loads, operations and stores, with scratch tiles for values read
// again later (the shorter of the reordered and the group-order program).
#include "backends/cpu/tile_program_compiler.hpp"

#include <algorithm>
#include <array>
#include <unordered_map>

namespace fluxion::cpu {

void compile_tile_program(const runtime::Step& step, FusedLowering& lowering) {
  using runtime::FusedMember;
  using runtime::FusedOperand;
  using runtime::kBlock;
  using runtime::kMaxFusedInputs;
  // Interpreters (FLUXION_LIGHT_KERNELS) run plain-loop block kernels; the programs' Eigen packet
  // code would only add to the first cell's compile time there.
  if (kLightKernels) return;
  if (step.members.empty() || step.track_uniform || step.periodic_views || step.row_broadcasts > 0) return;
  const DType dtype = step.members.front().in_dtype;
  if (dtype != f32 && dtype != f64) return;
  if (step.n < tile_elements<float>()) return;
  int sums = 0;
  for (size_t i = 0; i < step.members.size(); ++i) {
    const FusedMember& m = step.members[i];
    if (m.broadcast || m.row > 0 || m.in_dtype != dtype || (m.out_dtype != dtype)) return;
    if (m.reduce) {
      if (m.layout.outputs != 1 || ++sums > kMaxTileSums) return;
      continue;
    }
    if (tile_op_arity(lowering.members[i].tile_op) != m.num_inputs) return;
  }
  // Values, numbered in member order (a scratch slot or external holds several over the group):
  // the operand keys below name where a value lives; -1 is a literal or rank-0 operand.
  auto key = [](const FusedOperand& op) -> int64_t {
    if (op.scalar || op.source == FusedOperand::literal) return -1;
    return (op.source == FusedOperand::scratch ? int64_t(1) << 32 : 0) + op.index;
  };
  const int count = static_cast<int>(step.members.size());
  std::unordered_map<int64_t, int> current;  // key -> the value there now
  std::vector<int> producer;                 // value -> member (-1: a group input)
  std::vector<int32_t> home;                 // value -> external index holding it, or -1
  std::vector<std::array<int, kMaxFusedInputs>> in_value(static_cast<size_t>(count));
  std::vector<int> out_value(static_cast<size_t>(count), -1);
  for (int m = 0; m < count; ++m) {
    const FusedMember& member = step.members[static_cast<size_t>(m)];
    for (int i = 0; i < member.num_inputs; ++i) {
      const int64_t k = key(member.inputs[i]);
      int v = -1;
      if (k != -1) {
        auto it = current.find(k);
        if (it == current.end()) {
          v = static_cast<int>(producer.size());
          producer.push_back(-1);
          home.push_back(member.inputs[i].index);
          current.emplace(k, v);
        } else {
          v = it->second;
        }
      }
      in_value[static_cast<size_t>(m)][static_cast<size_t>(i)] = v;
    }
    if (member.reduce) continue;
    const int v = static_cast<int>(producer.size());
    producer.push_back(m);
    home.push_back(member.output.source == FusedOperand::external ? member.output.index : -1);
    current[key(member.output)] = v;
    out_value[static_cast<size_t>(m)] = v;
  }
  auto reads = [&](int m, int v) {
    const FusedMember& member = step.members[static_cast<size_t>(m)];
    for (int i = 0; i < member.num_inputs; ++i)
      if (in_value[static_cast<size_t>(m)][static_cast<size_t>(i)] == v) return true;
    return false;
  };
  // Order: members in a topological order that runs a value's reader right after it where one
  // is ready (the earliest such in group order), else the earliest ready member. Only the values'
  // dependencies constrain it: a fused step never writes in place (its StepUses::in_place entry
  // is false), so no output shares a buffer with an input.
  std::vector<char> done(static_cast<size_t>(count), 0);
  auto ready = [&](int m) {
    for (int i = 0; i < step.members[static_cast<size_t>(m)].num_inputs; ++i) {
      const int v = in_value[static_cast<size_t>(m)][static_cast<size_t>(i)];
      const int p = v >= 0 ? producer[static_cast<size_t>(v)] : -1;
      if (p >= 0 && !done[static_cast<size_t>(p)]) return false;
    }
    return true;
  };
  std::vector<int> order;
  for (int held = -1; static_cast<int>(order.size()) < count;) {
    int pick = -1;
    for (int m = 0; m < count; ++m) {
      if (done[static_cast<size_t>(m)] || !ready(m)) continue;
      if (pick < 0) pick = m;
      if (held >= 0 && reads(m, held)) {
        pick = m;
        break;
      }
    }
    done[static_cast<size_t>(pick)] = 1;
    order.push_back(pick);
    if (!step.members[static_cast<size_t>(pick)].reduce) held = out_value[static_cast<size_t>(pick)];
  }
  // The program for one member order, and whether its scratch tiles fit the step's scratch.
  auto emit = [&](const std::vector<int>& sequence, std::vector<TileInstr>& program, std::vector<int64_t>& sum_accs) {
    std::vector<int> position(static_cast<size_t>(count), 0);
    for (int q = 0; q < count; ++q) position[static_cast<size_t>(sequence[static_cast<size_t>(q)])] = q;
    std::vector<int> last_read(producer.size(), -1);
    std::vector<char> read_later(producer.size(), 0);  // read after the member following its producer
    for (int m = 0; m < count; ++m)
      for (int i = 0; i < step.members[static_cast<size_t>(m)].num_inputs; ++i) {
        const int v = in_value[static_cast<size_t>(m)][static_cast<size_t>(i)];
        if (v < 0) continue;
        const int at = position[static_cast<size_t>(m)], p = producer[static_cast<size_t>(v)];
        last_read[static_cast<size_t>(v)] = std::max(last_read[static_cast<size_t>(v)], at);
        if (p >= 0 && at > position[static_cast<size_t>(p)] + 1) read_later[static_cast<size_t>(v)] = 1;
      }
    // Scratch tiles for values read later, reused once their last reader has run; each block
    // slot of the step's scratch holds kBlock / tile elements of them.
    const int max_slots =
        static_cast<int>(std::max<int32_t>(step.scratch_slots, 1) * (kBlock / tile_elements<float>()));
    std::vector<int32_t> slot(producer.size(), -1), free_slots;
    int slots = 0;
    int acc = -2;  // the value in the accumulator (-2: none or unnamed)
    auto operand = [&](const FusedOperand& op, int v, TileInstr& in) {
      if (op.source == FusedOperand::literal) {
        in.source = TileInstr::scalar;
        in.literal = op.literal_ptr;
      } else if (op.scalar) {
        in.source = TileInstr::scalar;
        in.index = op.index;
      } else if (home[static_cast<size_t>(v)] >= 0) {
        in.source = TileInstr::external;
        in.index = home[static_cast<size_t>(v)];
      } else {
        in.source = TileInstr::scratch;
        in.index = slot[static_cast<size_t>(v)];
      }
    };
    auto emit_load = [&](const FusedOperand& op, int v) {
      TileInstr in;
      in.kind = TileInstr::load;
      operand(op, v, in);
      in.finish();
      program.push_back(in);
      acc = v >= 0 ? v : -2;
    };
    auto held = [&](int v) { return v >= 0 && v == acc; };
    for (int q = 0; q < count; ++q) {
      const int m = sequence[static_cast<size_t>(q)];
      const FusedMember& member = step.members[static_cast<size_t>(m)];
      const auto& vin = in_value[static_cast<size_t>(m)];
      const FusedOperand& a = member.inputs[0];
      TileInstr in;
      if (member.reduce) {
        if (!held(vin[0])) emit_load(a, vin[0]);
        in.kind = TileInstr::sum;
        in.index = static_cast<int32_t>(sum_accs.size());
        sum_accs.push_back(member.acc);
      } else if (member.num_inputs == 1) {
        if (!held(vin[0])) emit_load(a, vin[0]);
        in.kind = TileInstr::unary;
        in.op = lowering.members[static_cast<size_t>(m)].tile_op;
      } else {
        in.kind = TileInstr::binary;
        in.op = lowering.members[static_cast<size_t>(m)].tile_op;
        const FusedOperand* other = &member.inputs[1];
        int other_value = vin[1];
        if (held(vin[1]) && !held(vin[0])) {  // b is in the accumulator
          other = &a;
          other_value = vin[0];
          in.reversed = true;
        } else if (!held(vin[0])) {
          emit_load(a, vin[0]);
        }
        if (held(other_value)) in.source = TileInstr::self;
        else operand(*other, other_value, in);
      }
      in.finish();
      program.push_back(in);
      // Scratch tiles whose value this member read last are free (it read them before storing).
      for (int i = 0; i < member.num_inputs; ++i) {
        const int v = vin[static_cast<size_t>(i)];
        if (v >= 0 && slot[static_cast<size_t>(v)] >= 0 && last_read[static_cast<size_t>(v)] == q) {
          free_slots.push_back(slot[static_cast<size_t>(v)]);
          slot[static_cast<size_t>(v)] = -1;
        }
      }
      if (member.reduce) continue;
      const int out = out_value[static_cast<size_t>(m)];
      acc = out;
      if (home[static_cast<size_t>(out)] < 0 && !read_later[static_cast<size_t>(out)]) continue;
      TileInstr st;
      st.kind = TileInstr::store;
      if (home[static_cast<size_t>(out)] >= 0) {
        st.source = TileInstr::external;
        st.index = home[static_cast<size_t>(out)];
      } else {
        if (free_slots.empty()) {
          slot[static_cast<size_t>(out)] = slots++;
        } else {
          slot[static_cast<size_t>(out)] = free_slots.back();
          free_slots.pop_back();
        }
        st.source = TileInstr::scratch;
        st.index = slot[static_cast<size_t>(out)];
      }
      st.finish();
      program.push_back(st);
    }
    // Only -(a b) is contracted (same bits as mul then neg); a product and the add reading it stay
    // two roundings, as in eager evaluation (see contract_negated_products).
    contract_negated_products(program);
    return slots <= max_slots;
  };
  std::vector<int> group_order(static_cast<size_t>(count));
  for (int m = 0; m < count; ++m) group_order[static_cast<size_t>(m)] = m;
  // The reordered program, unless the group's own order gives a shorter one.
  std::vector<TileInstr> program, plain;
  std::vector<int64_t> program_sums, plain_sums;
  bool fits = emit(order, program, program_sums);
  if (order != group_order && emit(group_order, plain, plain_sums) && (!fits || plain.size() < program.size())) {
    program = std::move(plain);
    program_sums = std::move(plain_sums);
    fits = true;
  }
  if (!fits) return;  // more live tiles than the step's scratch holds: the block path runs it
  lowering.tile_sums = std::move(program_sums);
  lowering.program = std::move(program);
  lowering.program_dtype = dtype;
}

}  // namespace fluxion::cpu
