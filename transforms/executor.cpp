// The executor: plans an optimized Jaxpr once (fusion groups, variable kinds, buffers assigned by
// liveness) and runs the plan with no per-call allocation for fixed shapes.
#include "transforms/executor.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <numeric>
#include <sstream>
#include <type_traits>
#include <unordered_map>

#include "backends/cpu/kernel_threads.hpp"
#include "backends/cpu/tile_program.hpp"
#include "transforms/fusion.hpp"
#include "passes/passes.hpp"
#include "passes/simplify.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace fluxion {

namespace executor_detail {

constexpr int64_t kBlock = 1024;                 // elements per fused block (8 KiB of f64)
constexpr int64_t kParallelElements = 1 << 16;   // fused groups this large use every thread

/// How a variable gets its storage.
enum class Kind : uint8_t {
  arg,           // a call argument
  constant,      // a Jaxpr constant (or a view of a literal): fixed for the plan's lifetime
  intermediate,  // a pooled buffer shared by variables whose lifetimes do not overlap
  output,        // a dedicated buffer handed to the caller, reused once the caller drops it
  stable_view,   // the bytes of a constant or intermediate, reinterpreted (made once)
  dynamic_view,  // the bytes of an argument or output, reinterpreted (made per call)
  tiled,         // a product computed tile by tile inside the fused group reading it: no storage
};

/// Threads a large fused group may use (fluxion::num_threads; 1 without OpenMP).
int max_threads() {
#ifdef _OPENMP
  return std::max(1, num_threads());
#else
  return 1;
#endif
}

/// True when equation `e`, alone in its fusion group, still runs as a fused step of one member:
/// an elementwise operation large enough (kParallelElements) to split over the threads, which
/// its kernel would not do (W5's MLP Hessian-vector product ends with two lone adds of 0.4 M
/// elements).
bool parallel_single(const Jaxpr& j, const Equation& e, Backend backend) {
  return backend == Backend::cpu && max_threads() > 1 && e.primitive->traits.elementwise && !e.primitive->traits.view &&
         e.outputs.size() == 1 && j.avals[e.outputs[0]].shape.num_elements() >= kParallelElements &&
         fusible(j, e, backend);
}

}  // namespace executor_detail

using executor_detail::Kind;
using executor_detail::kBlock;

/// An operand of a fused member: an external variable (its pointer is resolved per call), a
/// literal, a scratch slot of the block, or the rows of a broadcast along trailing dims: the
/// broadcast's external operand, one value per run of `row` elements.
struct FusedOperand {
  enum Source : uint8_t { external, literal, scratch, rows } source = external;
  int32_t index = 0;       // position in the step's external list, or scratch slot
  int64_t row = 0;         // rows: elements per value
  bool scalar = false;     // rank-0: broadcast over the block
  int32_t itemsize = 0;
  const void* literal_ptr = nullptr;
};

constexpr int kMaxFusedInputs = 4;
/// Fused groups with at least this many elements get replicas of their short periodic operands.
constexpr int64_t kReplicaMinElements = 4 * kBlock;
constexpr int kMaxUniformSlots = 64;  // scratch slots whose one-value state the block loop tracks

struct FusedMember {
  // A broadcast_in_dim member fills its block from its operand (inputs[0]) by index mapping:
  // output dims `bdims` (coalesced, at most 8) read the operand with element strides `bsrc`.
  bool broadcast = false;
  std::vector<int64_t> bdims, bsrc;
  // > 0: the broadcast repeats its whole operand (contiguous, `period` elements) along leading
  // dims; a block inside one repetition is read from the operand in place (no copy).
  int64_t period = 0;
  // >= 0: bases[replica] holds `replica_len` elements of the operand repeated (built once per
  // call, see Step::replica_bytes), so that blocks spanning repetitions are read in place too.
  int32_t replica = -1;
  int64_t replica_len = 0;
  BlockKernel block = nullptr;
  RowBlockKernel row_block = nullptr;
  TileOp tile_op = TileOp::none;
  int64_t row = 0;  // > 0: some inputs are rows operands with runs of `row` elements
  DType in_dtype = f32, out_dtype = f32;
  // A reduce_sum member adds its operand's block into per-output sums (see FusedReduction), kept
  // at accumulator offset `acc` and written out after the group.
  bool reduce = false;
  FusedReduction layout;
  int64_t acc = 0;
  int num_inputs = 0;
  FusedOperand inputs[kMaxFusedInputs];  // inline: the block loop touches no other memory
  bool scalar[kMaxFusedInputs] = {};
  FusedOperand output;
};

struct Step {
  enum Type : uint8_t { kernel, fused, dynamic_view, nothing, side_by_side } type = nothing;
  const Equation* eqn = nullptr;  // kernel and dynamic_view
  Kernel fn = nullptr;
  // Fused groups.
  int64_t n = 0;
  std::vector<int32_t> externals;  // variables whose base pointers the members use
  std::vector<FusedMember> members;
  int32_t scratch_slots = 0;
  int64_t accumulators = 0;
  int32_t row_broadcasts = 0;  // broadcast members never run: every reader reads their rows
  // Whether blocks of one repeated value can occur (a broadcast along the last dim, or a member
  // reading one per row, writing scratch): only then does the block loop track them (it costs per
  // member).
  bool track_uniform = false;  // doubles per thread for the reduce members' row sums
  bool periodic_views = false;  // some broadcast member has a period (and scratch_slots <= kMaxUniformSlots)
  // Bytes of the members' replicas (FusedMember::replica: bases after the externals', each
  // 64-byte aligned), built from their operands before the group runs.
  int64_t replica_bytes = 0;
  int32_t replicas = 0;
  // A product computed by tiles inside this group (Primitive::tile): its output is the group's
  // external `tiled_external`, never stored whole; each tile_rows x tile_cols tile of its m x n
  // matrix view is written to a per-thread buffer and the group runs on that tile's elements
  // while they are in cache (GMM's 1000 x 6400 product, bench W8: 51 MB written, zero-filled
  // and read back per call otherwise).
  const Equation* tiled = nullptr;
  TileKernel tile = nullptr;
  TilePlan tile_plan;
  int32_t tiled_external = -1;
  int32_t tiled_itemsize = 0;
  int64_t tile_rows = 0, tile_cols = 0;
  // The group as a register program (backends/cpu/tile_program.hpp), when every member has a
  // tile form: run over whole tiles, the remainder by the block path. Sum instruction k adds
  // into accumulator tile_sums[k].
  std::vector<cpu::TileInstr> program;
  DType program_dtype = f32;
  std::vector<int64_t> tile_sums;
  // Side by side (plan_side_by_side): mutually independent kernel steps, run in rounds of
  // `rounds[r]` consecutive parts; a round of several runs one part per thread (each kernel on
  // one thread), a round of one runs its part alone with every thread.
  std::vector<Step> parts;
  std::vector<int32_t> rounds;
};

struct Executable::Plan {
  Device device;
  Backend backend = Backend::cpu;
  std::vector<Kind> kind;               // by variable
  std::vector<int32_t> buffer_of;       // intermediate -> logical buffer
  std::vector<int32_t> view_source;     // stable/dynamic views -> viewed variable
  std::vector<Tensor> fixed;            // constants and views of literals, by variable
  std::vector<int64_t> buffer_bytes;    // logical buffers' capacities
  std::vector<Step> steps;
  std::vector<int32_t> output_vars;     // variables of Kind::output
  std::vector<int32_t> dynamic_views;   // cleared after each call
  int32_t max_scratch = 0;
  int64_t max_accumulators = 0;
  int32_t max_externals = 0;
  int32_t max_inputs = 0, max_outputs = 0;
  int64_t max_tile_bytes = 0;           // one tile buffer (per thread)
  int64_t max_replica_bytes = 0;        // one step's periodic replicas (shared by the threads)
  int32_t max_side = 0;                 // most kernels a side-by-side round runs at once
};

struct Executable::State {
  std::vector<Tensor> values;  // by variable
  // By variable, for dynamic views: the ArrayImpl of the last call's view, reused (rebound to
  // the new bytes) when no Tensor holds it any more, so a view costs no allocation per call.
  std::vector<std::shared_ptr<ArrayImpl>> view_impls;
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::vector<double> scratch_storage;  // threads x slots x kBlock elements (8 bytes each), + slack
  double* scratch = nullptr;            // scratch_storage aligned to 64 bytes: Eigen's block kernels
                                        // peel unaligned heads with scalar code (scalar exp/tanh)
  size_t scratch_size = 0;              // usable elements at `scratch`
  std::vector<double> accumulators;     // threads x plan.max_accumulators row sums
  std::vector<char*> bases;
  std::vector<Tensor> in, out;
  std::vector<std::vector<Tensor>> side_in, side_out;  // by thread, for side-by-side rounds
  std::vector<double> tile_storage;     // threads x tile_stride bytes, for tiled products
  char* tiles = nullptr;                // tile_storage aligned to 64 bytes
  int64_t tile_stride = 0;              // bytes per thread: max_tile_bytes rounded up to 64
  std::vector<char*> tile_bases;        // threads x bases.size(): each thread's bases while tiling
  std::vector<double> replica_storage;  // plan.max_replica_bytes, for the running step's replicas
  char* replicas = nullptr;             // replica_storage aligned to 64 bytes
};

namespace executor_detail {

int32_t itemsize_of(DType d) { return static_cast<int32_t>(dtype_size(d)); }

/// Assigns logical buffers to intermediates by liveness: a buffer is free again after the last
/// step reading any variable stored in it. Elementwise kernels may write over an input that dies
/// at that step when the element sizes match (coefficient-wise kernels are alias-safe).
void assign_buffers(const Jaxpr& j, Executable::Plan& plan, const std::vector<std::vector<int32_t>>& defs,
                    const std::vector<std::vector<int32_t>>& reads, const std::vector<bool>& in_place) {
  const size_t nv = j.avals.size();
  auto root = [&](int32_t v) {
    while (plan.kind[v] == Kind::stable_view) v = plan.view_source[v];
    return v;
  };
  std::vector<int32_t> last_use(nv, -1);
  for (size_t s = 0; s < reads.size(); ++s)
    for (int32_t v : reads[s]) last_use[root(v)] = static_cast<int32_t>(s);
  plan.buffer_of.assign(nv, -1);
  std::vector<int32_t> free_list;
  auto nbytes = [&](int32_t v) {
    return static_cast<int64_t>(j.avals[v].shape.num_elements()) * itemsize_of(j.avals[v].dtype);
  };
  auto release = [&](int32_t v) {
    if (plan.kind[v] == Kind::intermediate && plan.buffer_of[v] >= 0) free_list.push_back(plan.buffer_of[v]);
  };
  auto allocate = [&](int32_t v) {
    int64_t need = nbytes(v);
    int best = -1;
    for (int k = 0; k < static_cast<int>(free_list.size()); ++k) {
      int64_t cap = plan.buffer_bytes[free_list[k]];
      if (best < 0) { best = k; continue; }
      int64_t bcap = plan.buffer_bytes[free_list[best]];
      bool fits = cap >= need, bfits = bcap >= need;
      if ((fits && !bfits) || (fits && bfits && cap < bcap) || (!fits && !bfits && cap > bcap)) best = k;
    }
    if (best < 0) {
      plan.buffer_bytes.push_back(need);
      plan.buffer_of[v] = static_cast<int32_t>(plan.buffer_bytes.size() - 1);
      return;
    }
    int32_t b = free_list[best];
    free_list.erase(free_list.begin() + best);
    plan.buffer_bytes[b] = std::max(plan.buffer_bytes[b], need);
    plan.buffer_of[v] = b;
  };
  for (size_t s = 0; s < defs.size(); ++s) {
    std::vector<int32_t> released;
    if (in_place[s]) {
      int32_t out_size = defs[s].empty() ? 0 : itemsize_of(j.avals[defs[s][0]].dtype);
      for (int32_t v : reads[s]) {
        int32_t r = root(v);
        if (last_use[r] == static_cast<int32_t>(s) && itemsize_of(j.avals[r].dtype) == out_size &&
            std::find(released.begin(), released.end(), r) == released.end()) {
          release(r);
          released.push_back(r);
        }
      }
    }
    for (int32_t v : defs[s])
      if (plan.kind[v] == Kind::intermediate) allocate(v);
    for (int32_t v : reads[s]) {
      int32_t r = root(v);
      if (last_use[r] == static_cast<int32_t>(s) && std::find(released.begin(), released.end(), r) == released.end()) {
        release(r);
        released.push_back(r);
      }
    }
    // Values defined and never read (outputs of multi-output primitives) free immediately.
    for (int32_t v : defs[s])
      if (last_use[v] < 0 && plan.kind[v] == Kind::intermediate) release(v);
  }
}

/// Builds the fused step of equations `group` (all fusible, one output shape).
Step make_fused_step(const Jaxpr& j, const std::vector<int32_t>& group, const std::vector<int32_t>& uses_outside) {
  Step step;
  step.type = Step::fused;
  const Equation& first = j.equations[group.front()];
  step.n = j.avals[first.outputs[0]].shape.num_elements();
  std::vector<int32_t> slot_of(j.avals.size(), -1);
  std::vector<int32_t> external_index(j.avals.size(), -1);
  // Last member reading each group-internal value, to recycle scratch slots.
  std::vector<int32_t> last_read(j.avals.size(), -1);
  for (size_t m = 0; m < group.size(); ++m)
    for (const Atom& a : j.equations[group[m]].inputs)
      if (!a.is_literal()) last_read[a.var] = static_cast<int32_t>(m);
  std::vector<bool> in_group(j.avals.size(), false);
  for (int32_t eq : group) in_group[j.equations[eq].outputs[0]] = true;
  std::vector<int32_t> free_slots;
  auto external = [&](int32_t v) {
    if (external_index[v] < 0) {
      external_index[v] = static_cast<int32_t>(step.externals.size());
      step.externals.push_back(v);
    }
    return external_index[v];
  };
  const RowReads rows = fused_row_reads(j, group);
  for (size_t m = 0; m < group.size(); ++m) {
    const Equation& e = j.equations[group[m]];
    // A broadcast whose readers all read its rows, in the group only, never runs.
    if (const int32_t v = e.outputs[0]; rows.row[v] > 0 && !rows.full[v] && !uses_outside[v]) {
      ++step.row_broadcasts;
      continue;
    }
    FusedMember member;
    member.block = e.primitive->block;
    member.row_block = e.primitive->row_block;
    member.tile_op = e.primitive->tile_op;
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
      if (a.is_literal()) {
        op.source = FusedOperand::literal;
        op.scalar = true;
        op.literal_ptr = a.literal.array().data();
      } else if (rows.member_rows[m] && rows.row[a.var] > 0) {
        op.source = FusedOperand::rows;
        op.index = external(rows.source[a.var]);
        op.row = member.row = rows.row[a.var];
      } else if (in_group[a.var] && slot_of[a.var] >= 0) {
        op.source = FusedOperand::scratch;
        op.index = slot_of[a.var];
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
      if (!a.is_literal() && slot_of[a.var] >= 0 && last_read[a.var] == static_cast<int32_t>(m)) {
        const bool widens = member.output.itemsize > itemsize_of(j.aval_of(a).dtype);
        (widens ? freed_after : free_slots).push_back(slot_of[a.var]);
        slot_of[a.var] = -1;
      }
    if (uses_outside[out] || member.reduce) {
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
      slot_of[out] = member.output.index;
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
  // Periods shorter than a block: every block spans repetitions and would copy the operand into
  // scratch, repetition by repetition (W8's d=32,K=5 objective: rows of 160 repeated over its
  // tiles of whole rows, 7 % of its time). A replica of a block's length plus a period serves
  // every block in place. Only for large groups: building it costs about a block's copy per call.
  if (step.periodic_views && step.n >= kReplicaMinElements)
    for (FusedMember& m : step.members) {
      if (m.period <= 0 || m.period >= kBlock || m.output.source != FusedOperand::scratch) continue;
      m.replica = static_cast<int32_t>(step.externals.size()) + step.replicas++;
      m.replica_len = (kBlock + 2 * m.period - 2) / m.period * m.period;  // >= kBlock + period - 1
      step.replica_bytes += (m.replica_len * m.output.itemsize + 63) / 64 * 64;
    }
  return step;
}

using cpu::kMaxTileSums;

/// The register program of fused step `step`, or nothing when some member has no tile form (a
/// broadcast, a row-read operand, a reduction other than a full sum, another dtype, a primitive
/// without a TileOp). Members are reordered so that a value's reader follows it where it can;
/// values stay in the accumulator along chains, and a value is stored when it escapes the group
/// or a member after the next one reads it (to a scratch tile, reused after its last reader).
void compile_tile_program(Step& step) {
  // Interpreters (FLUXION_LIGHT_KERNELS) run plain-loop block kernels; the programs' Eigen packet
  // code would only add to the first cell's compile time there.
  if (kLightKernels) return;
  if (step.members.empty() || step.track_uniform || step.periodic_views || step.row_broadcasts > 0) return;
  const DType dtype = step.members.front().in_dtype;
  if (dtype != f32 && dtype != f64) return;
  if (step.n < cpu::tile_elements<float>()) return;
  int sums = 0;
  for (const FusedMember& m : step.members) {
    if (m.broadcast || m.row > 0 || m.in_dtype != dtype || (m.out_dtype != dtype)) return;
    if (m.reduce) {
      if (m.layout.outputs != 1 || ++sums > kMaxTileSums) return;
      continue;
    }
    if (cpu::tile_op_arity(m.tile_op) != m.num_inputs) return;
  }
  // Values, numbered in member order (a scratch slot or external holds several over the group):
  // the operand keys below name where a value lives; -1 is a literal or rank-0 operand.
  auto key = [](const FusedOperand& op) -> int64_t {
    if (op.scalar || op.source == FusedOperand::literal) return -1;
    return (op.source == FusedOperand::scratch ? int64_t(1) << 32 : 0) + op.index;
  };
  const int count = static_cast<int>(step.members.size());
  std::unordered_map<int64_t, int> current;   // key -> the value there now
  std::vector<int> producer;                  // value -> member (-1: a group input)
  std::vector<int32_t> home;                  // value -> external index holding it, or -1
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
  // dependencies constrain it: a fused step never writes in place (its in_place entry in the
  // Executable constructor is false), so no output shares a buffer with an input.
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
  auto emit = [&](const std::vector<int>& sequence, std::vector<cpu::TileInstr>& program,
                  std::vector<int64_t>& sum_accs) {
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
        static_cast<int>(std::max<int32_t>(step.scratch_slots, 1) * (kBlock / cpu::tile_elements<float>()));
    std::vector<int32_t> slot(producer.size(), -1), free_slots;
    int slots = 0;
    int acc = -2;  // the value in the accumulator (-2: none or unnamed)
    auto operand = [&](const FusedOperand& op, int v, cpu::TileInstr& in) {
      if (op.source == FusedOperand::literal) {
        in.source = cpu::TileInstr::scalar;
        in.literal = op.literal_ptr;
      } else if (op.scalar) {
        in.source = cpu::TileInstr::scalar;
        in.index = op.index;
      } else if (home[static_cast<size_t>(v)] >= 0) {
        in.source = cpu::TileInstr::external;
        in.index = home[static_cast<size_t>(v)];
      } else {
        in.source = cpu::TileInstr::scratch;
        in.index = slot[static_cast<size_t>(v)];
      }
    };
    auto emit_load = [&](const FusedOperand& op, int v) {
      cpu::TileInstr in;
      in.kind = cpu::TileInstr::load;
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
      cpu::TileInstr in;
      if (member.reduce) {
        if (!held(vin[0])) emit_load(a, vin[0]);
        in.kind = cpu::TileInstr::sum;
        in.index = static_cast<int32_t>(sum_accs.size());
        sum_accs.push_back(member.acc);
      } else if (member.num_inputs == 1) {
        if (!held(vin[0])) emit_load(a, vin[0]);
        in.kind = cpu::TileInstr::unary;
        in.op = member.tile_op;
      } else {
        in.kind = cpu::TileInstr::binary;
        in.op = member.tile_op;
        const FusedOperand* other = &member.inputs[1];
        int other_value = vin[1];
        if (held(vin[1]) && !held(vin[0])) {  // b is in the accumulator
          other = &a;
          other_value = vin[0];
          in.reversed = true;
        } else if (!held(vin[0])) {
          emit_load(a, vin[0]);
        }
        if (held(other_value)) in.source = cpu::TileInstr::self;
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
      cpu::TileInstr st;
      st.kind = cpu::TileInstr::store;
      if (home[static_cast<size_t>(out)] >= 0) {
        st.source = cpu::TileInstr::external;
        st.index = home[static_cast<size_t>(out)];
      } else {
        if (free_slots.empty()) {
          slot[static_cast<size_t>(out)] = slots++;
        } else {
          slot[static_cast<size_t>(out)] = free_slots.back();
          free_slots.pop_back();
        }
        st.source = cpu::TileInstr::scratch;
        st.index = slot[static_cast<size_t>(out)];
      }
      st.finish();
      program.push_back(st);
    }
    // Only -(a b) is contracted (same bits as mul then neg); a product and the add reading it stay
    // two roundings, as in eager evaluation (see contract_negated_products).
    cpu::contract_negated_products(program);
    return slots <= max_slots;
  };
  std::vector<int> group_order(static_cast<size_t>(count));
  for (int m = 0; m < count; ++m) group_order[static_cast<size_t>(m)] = m;
  // The reordered program, unless the group's own order gives a shorter one.
  std::vector<cpu::TileInstr> program, plain;
  std::vector<int64_t> program_sums, plain_sums;
  bool fits = emit(order, program, program_sums);
  if (order != group_order && emit(group_order, plain, plain_sums) && (!fits || plain.size() < program.size())) {
    program = std::move(plain);
    program_sums = std::move(plain_sums);
    fits = true;
  }
  if (!fits) return;  // more live tiles than the step's scratch holds: the block path runs it
  step.tile_sums = std::move(program_sums);
  step.program = std::move(program);
  step.program_dtype = dtype;
}

/// Products whose output is smaller than this are computed whole: it stays in L2 (2 MiB per core
/// here) for the group reading it anyway. W8's d=10,K=25 objective (a 2 MB product) took
/// 0.79-0.90 ms tiled against 0.93-1.06 ms whole; at 1.28 MB (d=32,K=5) both were equal.
constexpr int64_t kTileMinBytes = int64_t(1) << 20;
/// Elements of one tile (1 MiB of f64, beside the operands' packed panels in L2) and its widest
/// rows. Measured on W8's 1000 x 6400 x 64 product with its sum of squares: tiles of 250 x 512,
/// 128 x 1024 or 1000 x 128 all took 20-21 ms, against 27 ms for the whole product and then the
/// sums (and 25 ms for tiles as wide as the product).
constexpr int64_t kTileElements = int64_t(1) << 17;
constexpr int64_t kTileMaxCols = 1024;

/// `extent` split evenly into the fewest parts of at most `most`: the part size.
int64_t even_part(int64_t extent, int64_t most) {
  const int64_t parts = (extent + most - 1) / most;
  return (extent + parts - 1) / parts;
}

/// Tile columns start at multiples of this many (the register panels' widths divide it), so a
/// product whose op(b) has zero rows per column block (W8's triangular Q_k^T, 64 columns each at
/// d = 64) keeps them at the ends of its panels, where panel_product skips them: tiles of 915
/// columns cut the blocks and left the d=64, K=100 objective's panels about dense.
constexpr int64_t kTileColumnAlign = 64;

/// Columns of a product tile: even parts of at most kTileMaxCols, rounded up to kTileColumnAlign.
int64_t tile_columns(int64_t n) {
  const int64_t part = even_part(n, kTileMaxCols);
  return part < n ? std::min(n, (part + kTileColumnAlign - 1) / kTileColumnAlign * kTileColumnAlign) : part;
}

/// Tile rows for an m-row product cut in `col_tiles` column tiles, from `rows` (even_part's),
/// so that few tiles split evenly over `threads`: the row tiles are raised until the tile count
/// is a multiple of the thread count (up to 8 tiles a thread, past which the last uneven share
/// matters little). W8's 1000 x 320 x 64 product (d=64, K=5) came in 3 tiles, which 2 threads
/// ran as 2 + 1: the objective took as long as on one thread.
int64_t balanced_tile_rows(int64_t m, int64_t rows, int64_t col_tiles, int threads) {
  int64_t row_tiles = (m + rows - 1) / rows;
  if (threads <= 1 || row_tiles * col_tiles >= 8 * int64_t(threads)) return rows;
  while ((row_tiles * col_tiles) % threads != 0 && row_tiles < m) ++row_tiles;
  return (m + row_tiles - 1) / row_tiles;
}

/// True when the members of fused step `f` read its external `x` only as whole blocks (not as a
/// scalar, by rows, or through a broadcast's index mapping): what a tile can stand in for.
bool reads_blocks_only(const Step& f, int32_t x) {
  for (const FusedMember& m : f.members)
    for (int i = 0; i < m.num_inputs; ++i) {
      const FusedOperand& op = m.inputs[i];
      if (op.index != x || (op.source != FusedOperand::external && op.source != FusedOperand::rows)) continue;
      if (op.source == FusedOperand::rows || op.scalar || m.broadcast) return false;
    }
  return true;
}

/// Moves each large tileable product (Primitive::tile) read by one fused group only into that
/// group (Step::tiled): the product's step does nothing, its output gets no storage, and its
/// operands stay alive until the group runs.
void plan_tiles(const Jaxpr& j, Executable::Plan& plan, std::vector<std::vector<int32_t>>& defs,
                std::vector<std::vector<int32_t>>& reads, std::vector<bool>& in_place) {
  if (plan.backend != Backend::cpu) return;
  std::vector<int32_t> reader(j.avals.size(), -1), readers(j.avals.size(), 0);
  for (size_t st = 0; st < reads.size(); ++st)
    for (int32_t v : reads[st])
      if (reader[v] != static_cast<int32_t>(st)) ++readers[v], reader[v] = static_cast<int32_t>(st);
  for (size_t sd = 0; sd < plan.steps.size(); ++sd) {
    Step& d = plan.steps[sd];
    if (d.type != Step::kernel || !d.eqn->primitive->tile || d.eqn->outputs.size() != 1) continue;
    const Equation& e = *d.eqn;
    const int32_t t = e.outputs[0];
    if (plan.kind[t] != Kind::intermediate || readers[t] != 1 || reader[t] >= static_cast<int32_t>(plan.steps.size()))
      continue;
    Step& f = plan.steps[static_cast<size_t>(reader[t])];
    const int32_t itemsize = itemsize_of(j.avals[t].dtype);
    if (f.type != Step::fused || f.tiled || f.n != j.avals[t].shape.num_elements() || f.n * itemsize < kTileMinBytes)
      continue;
    const auto x = static_cast<int32_t>(std::find(f.externals.begin(), f.externals.end(), t) - f.externals.begin());
    if (!reads_blocks_only(f, x)) continue;
    std::vector<AbstractValue> in;
    for (const Atom& a : e.inputs) in.push_back(j.aval_of(a));
    const TilePlan tp = e.primitive->tile_plan(in, *e.params);
    if (tp.m <= 0 || tp.m * tp.n != f.n) continue;
    f.tiled = &e;
    f.tile = e.primitive->tile;
    f.tile_plan = tp;
    f.tiled_external = x;
    f.tiled_itemsize = itemsize;
    f.tile_cols = tile_columns(tp.n);
    f.tile_rows = balanced_tile_rows(tp.m, even_part(tp.m, std::max<int64_t>(1, kTileElements / f.tile_cols)),
                                     (tp.n + f.tile_cols - 1) / f.tile_cols, max_threads());
    plan.max_tile_bytes = std::max(plan.max_tile_bytes, f.tile_rows * f.tile_cols * itemsize);
    plan.max_inputs = std::max<int32_t>(plan.max_inputs, static_cast<int32_t>(e.inputs.size()));
    plan.kind[t] = Kind::tiled;
    d.type = Step::nothing;
    in_place[sd] = false;
    defs[sd].erase(std::remove(defs[sd].begin(), defs[sd].end(), t), defs[sd].end());
    std::vector<int32_t>& r = reads[static_cast<size_t>(reader[t])];
    r.erase(std::remove(r.begin(), r.end(), t), r.end());
    for (const Atom& a : e.inputs)
      if (!a.is_literal()) r.push_back(a.var);
  }
}

/// Multiply-adds a moved element counts for in kernel_work: about as long as 8 multiply-adds of
/// an AVX-512 GEMM on one core here (~12 elements/ns of memory bandwidth, ~100 multiply-adds/ns).
constexpr double kElementWork = 8;
/// Kernels cheaper than this run alone: the team's start and join (~1-2 us) would eat the gain.
constexpr double kSideMinWork = 1 << 20;
/// Parallel efficiency assumed for a kernel that threads itself (cpu::kLargeWork and up): f32
/// GEMMs of W5's MLP ran at 1.7-1.9x their one-thread speed on 2 threads.
constexpr double kThreadedSpeedup = 0.9;

/// Estimated cost of a kernel step, in multiply-adds: a product's (its TilePlan's m n k), else
/// kElementWork for each element it reads and writes.
double kernel_work(const Jaxpr& j, const Equation& e) {
  std::vector<AbstractValue> in;
  for (const Atom& a : e.inputs) in.push_back(j.aval_of(a));
  if (e.primitive->tile_plan) {
    const TilePlan tp = e.primitive->tile_plan(in, *e.params);
    if (tp.m > 0) return static_cast<double>(tp.m) * static_cast<double>(tp.n) * static_cast<double>(std::max<int64_t>(tp.k, 1));
  }
  double elements = 0;
  for (const AbstractValue& a : in) elements += static_cast<double>(a.shape.num_elements());
  for (int32_t v : e.outputs) elements += static_cast<double>(j.avals[v].shape.num_elements());
  return elements * kElementWork;
}

/// The rounds of a run of independent kernels of costs `work` (sorted largest first) on
/// `threads` threads: the next `threads` parts go side by side, one thread each, when the largest
/// of them alone would take less than the group run one after the other, each kernel with the
/// threads it takes alone (every thread from cpu::kLargeWork); otherwise the largest runs alone.
std::vector<int32_t> side_rounds(const std::vector<double>& work, int threads) {
  std::vector<int32_t> rounds;
  size_t i = 0;
  while (i < work.size()) {
    const size_t group = std::min<size_t>(static_cast<size_t>(threads), work.size() - i);
    double one_by_one = 0;
    for (size_t p = i; p < i + group; ++p)
      one_by_one += work[p] >= cpu::kLargeWork ? work[p] / (threads * kThreadedSpeedup) : work[p];
    const bool side = group > 1 && work[i] < one_by_one;
    rounds.push_back(side ? static_cast<int32_t>(group) : 1);
    i += side ? group : 1;
  }
  return rounds;
}

/// Runs of consecutive kernel steps that read nothing another step of the run writes become one
/// side-by-side step (Step::parts in rounds, see side_rounds) when some round of it runs several
/// kernels at once. W5's MLP Hessian-vector product has five such runs of 2-5 products: on 2
/// threads each product's own split over the team ran them at 1.4-1.7x their one-thread speed,
/// the thin ones (256 x 512 x 10) at 0.7x, where side by side keeps every thread on its own
/// product. For liveness the step reads all its parts' inputs and then writes all their outputs,
/// so no part's output shares storage with another part's input.
void plan_side_by_side(const Jaxpr& j, Executable::Plan& plan, std::vector<std::vector<int32_t>>& defs,
                       std::vector<std::vector<int32_t>>& reads, std::vector<bool>& in_place) {
  const int threads = max_threads();
  if (plan.backend != Backend::cpu || threads <= 1) return;
  std::vector<Step> steps;
  std::vector<std::vector<int32_t>> new_defs, new_reads;
  std::vector<bool> new_in_place;
  const size_t count = plan.steps.size();
  auto keep = [&](size_t s) {
    steps.push_back(std::move(plan.steps[s]));
    new_defs.push_back(std::move(defs[s]));
    new_reads.push_back(std::move(reads[s]));
    new_in_place.push_back(in_place[s]);
  };
  auto eligible = [&](size_t s) {
    return plan.steps[s].type == Step::kernel && kernel_work(j, *plan.steps[s].eqn) >= kSideMinWork;
  };
  auto is_view = [&](size_t s) {
    const Step& st = plan.steps[s];
    return (st.type == Step::nothing || st.type == Step::dynamic_view) && st.eqn && st.eqn->primitive->traits.view;
  };
  size_t s = 0;
  while (s < count) {
    // The run from s: eligible kernels, none reading an output of an earlier one (or a view of
    // it), and views (solve's reshapes of b and of its result), which move before the run when
    // they view something it does not write, else after it.
    std::vector<int32_t> written;
    std::vector<size_t> kernels, views_before, views_after;
    size_t end = s;
    for (; end < count; ++end) {
      const bool depends = std::any_of(reads[end].begin(), reads[end].end(), [&](int32_t v) {
        return std::find(written.begin(), written.end(), v) != written.end();
      });
      if (is_view(end)) {
        (depends ? views_after : views_before).push_back(end);
        if (depends) written.push_back(plan.steps[end].eqn->outputs[0]);
        continue;
      }
      if (depends || !eligible(end)) break;
      kernels.push_back(end);
      written.insert(written.end(), defs[end].begin(), defs[end].end());
    }
    if (kernels.size() < 2) {
      keep(s);
      ++s;
      continue;
    }
    std::vector<std::pair<double, size_t>> by_work;
    for (size_t p : kernels) by_work.emplace_back(kernel_work(j, *plan.steps[p].eqn), p);
    std::stable_sort(by_work.begin(), by_work.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<double> work;
    for (const auto& w : by_work) work.push_back(w.first);
    std::vector<int32_t> rounds = side_rounds(work, threads);
    if (std::all_of(rounds.begin(), rounds.end(), [](int32_t r) { return r == 1; })) {
      for (size_t p = s; p < end; ++p) keep(p);
      s = end;
      continue;
    }
    for (size_t v : views_before) keep(v);
    Step side;
    side.type = Step::side_by_side;
    side.rounds = std::move(rounds);
    std::vector<int32_t> d, r;
    for (const auto& w : by_work) {
      side.parts.push_back(std::move(plan.steps[w.second]));
      d.insert(d.end(), defs[w.second].begin(), defs[w.second].end());
      r.insert(r.end(), reads[w.second].begin(), reads[w.second].end());
    }
    for (int32_t n : side.rounds) plan.max_side = std::max(plan.max_side, n);
    steps.push_back(std::move(side));
    new_defs.push_back(std::move(d));
    new_reads.push_back(std::move(r));
    new_in_place.push_back(false);
    for (size_t v : views_after) keep(v);
    s = end;
  }
  plan.steps = std::move(steps);
  defs = std::move(new_defs);
  reads = std::move(new_reads);
  in_place = std::move(new_in_place);
}

}  // namespace executor_detail

Executable::Executable(std::shared_ptr<const Jaxpr> jaxpr, Device device)
    : jaxpr_(std::move(jaxpr)), plan_(std::make_unique<Plan>()) {
  using namespace executor_detail;
  const Jaxpr& j = *jaxpr_;
  Plan& plan = *plan_;
  plan.device = device;
  plan.backend = device.is_cuda() ? Backend::cuda : Backend::cpu;
  const size_t nv = j.avals.size();
  plan.kind.assign(nv, Kind::intermediate);
  plan.view_source.assign(nv, -1);
  plan.fixed.assign(nv, Tensor());
  for (int32_t v : j.invars) plan.kind[v] = Kind::arg;
  for (size_t i = 0; i < j.constvars.size(); ++i) {
    plan.kind[j.constvars[i]] = Kind::constant;
    plan.fixed[j.constvars[i]] = j.consts[i].concrete("jit");
  }
  // Values returned to the caller must not live in pooled buffers: mark them (and, backwards
  // through views, what they view) fresh.
  std::vector<bool> fresh(nv, false);
  for (const Atom& a : j.outputs)
    if (!a.is_literal()) fresh[a.var] = true;
  for (auto it = j.equations.rbegin(); it != j.equations.rend(); ++it)
    if (it->primitive->traits.view && fresh[it->outputs[0]] && !it->inputs[0].is_literal())
      fresh[it->inputs[0].var] = true;

  std::vector<std::vector<int32_t>> groups = fuse_elementwise(j, plan.backend);
  // Which variables are read outside the group that defines them (other steps, outputs).
  std::vector<int32_t> group_of_var(nv, -1), uses_outside(nv, 0);
  for (size_t g = 0; g < groups.size(); ++g)
    for (int32_t eq : groups[g])
      for (int32_t v : j.equations[eq].outputs) group_of_var[v] = static_cast<int32_t>(g);
  for (size_t g = 0; g < groups.size(); ++g)
    for (int32_t eq : groups[g])
      for (const Atom& a : j.equations[eq].inputs)
        if (!a.is_literal() && (groups[g].size() == 1 || group_of_var[a.var] != static_cast<int32_t>(g)))
          uses_outside[a.var] = 1;
  for (const Atom& a : j.outputs)
    if (!a.is_literal()) uses_outside[a.var] = 1;

  std::vector<std::vector<int32_t>> defs, reads;
  std::vector<bool> in_place;
  for (const auto& group : groups) {
    std::vector<int32_t> d, r;
    if (group.size() == 1 && !parallel_single(j, j.equations[group[0]], plan.backend)) {
      const Equation& e = j.equations[group[0]];
      Step step;
      step.eqn = &e;
      if (e.primitive->traits.view) {
        const Atom& src = e.inputs[0];
        int32_t out = e.outputs[0];
        plan.view_source[out] = src.is_literal() ? -1 : src.var;
        if (src.is_literal()) {
          plan.kind[out] = Kind::constant;
          plan.fixed[out] = make_view(src.literal, j.avals[out]);
        } else {
          Kind k = plan.kind[src.var];
          bool dynamic = k == Kind::arg || k == Kind::output || k == Kind::dynamic_view;
          plan.kind[out] = dynamic ? Kind::dynamic_view : Kind::stable_view;
          if (dynamic) {
            step.type = Step::dynamic_view;
            plan.dynamic_views.push_back(out);
          }
          r.push_back(src.var);
        }
      } else {
        step.type = Step::kernel;
        step.fn = e.primitive->kernel(plan.backend);
        if (!step.fn)
          detail::fail<NotImplementedError>("jit", "no ", backend_name(plan.backend), " kernel for primitive '",
                                            e.primitive->name, "'.");
        for (int32_t v : e.outputs) {
          if (fresh[v]) plan.kind[v] = Kind::output;
          d.push_back(v);
        }
        for (const Atom& a : e.inputs)
          if (!a.is_literal()) r.push_back(a.var);
        plan.max_inputs = std::max<int32_t>(plan.max_inputs, static_cast<int32_t>(e.inputs.size()));
        plan.max_outputs = std::max<int32_t>(plan.max_outputs, static_cast<int32_t>(e.outputs.size()));
      }
      in_place.push_back(step.type == Step::kernel && e.primitive->traits.elementwise);
      plan.steps.push_back(std::move(step));
    } else {
      for (int32_t eq : group) {
        int32_t v = j.equations[eq].outputs[0];
        if (fresh[v]) plan.kind[v] = Kind::output;
      }
      Step step = make_fused_step(j, group, uses_outside);
      compile_tile_program(step);
      for (const FusedMember& m : step.members)
        if (m.output.source == FusedOperand::external) d.push_back(step.externals[m.output.index]);
      for (int32_t v : step.externals)
        if (std::find(d.begin(), d.end(), v) == d.end()) r.push_back(v);
      plan.max_scratch = std::max(plan.max_scratch, step.scratch_slots);
      plan.max_accumulators = std::max(plan.max_accumulators, step.accumulators);
      plan.max_externals = std::max<int32_t>(plan.max_externals, static_cast<int32_t>(step.externals.size()) + step.replicas);
      plan.max_replica_bytes = std::max(plan.max_replica_bytes, step.replica_bytes);
      in_place.push_back(false);  // members write before later members read the same positions
      plan.steps.push_back(std::move(step));
    }
    defs.push_back(std::move(d));
    reads.push_back(std::move(r));
  }
  plan_tiles(j, plan, defs, reads, in_place);
  plan_side_by_side(j, plan, defs, reads, in_place);
  // Jaxpr outputs are read after the last step.
  std::vector<int32_t> final_reads;
  for (const Atom& a : j.outputs)
    if (!a.is_literal()) final_reads.push_back(a.var);
  defs.emplace_back();
  reads.push_back(final_reads);
  in_place.push_back(false);
  for (size_t v = 0; v < nv; ++v)
    if (plan.kind[v] == Kind::output) plan.output_vars.push_back(static_cast<int32_t>(v));
  assign_buffers(j, plan, defs, reads, in_place);
}

Executable::~Executable() { delete fast_.load(); }

std::unique_ptr<Executable::State> Executable::acquire() const {
  if (State* fast = fast_.exchange(nullptr, std::memory_order_acquire)) return std::unique_ptr<State>(fast);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<State> s = std::move(idle_.back());
      idle_.pop_back();
      return s;
    }
  }
  const Jaxpr& j = *jaxpr_;
  const Plan& plan = *plan_;
  auto s = std::make_unique<State>();
  s->values.resize(j.avals.size());
  s->view_impls.resize(j.avals.size());
  for (int64_t bytes : plan.buffer_bytes) s->buffers.push_back(std::make_shared<Buffer>(plan.device, bytes));
  for (size_t v = 0; v < j.avals.size(); ++v) {
    switch (plan.kind[v]) {
      case Kind::constant: s->values[v] = plan.fixed[v]; break;
      case Kind::intermediate:
        if (plan.buffer_of[v] >= 0)
          s->values[v] = Tensor(std::make_shared<ArrayImpl>(j.avals[v], s->buffers[plan.buffer_of[v]]));
        break;
      case Kind::output: s->values[v] = empty(j.avals[v], plan.device); break;
      default: break;
    }
  }
  // Stable views in definition order (a view's source is defined before it).
  for (const Step& step : plan.steps) {
    if (!step.eqn || !step.eqn->primitive->traits.view) continue;
    int32_t out = step.eqn->outputs[0];
    if (plan.kind[out] != Kind::stable_view) continue;
    const Tensor& src = s->values[plan.view_source[out]];
    s->values[out] = make_view(src, j.avals[out]);
  }
  s->scratch_size = static_cast<size_t>(executor_detail::max_threads() * std::max(plan.max_scratch, 1) * kBlock);
  s->scratch_storage.resize(s->scratch_size + 8);
  const auto addr = reinterpret_cast<uintptr_t>(s->scratch_storage.data());
  s->scratch = s->scratch_storage.data() + ((64 - addr % 64) % 64) / sizeof(double);
  s->accumulators.resize(static_cast<size_t>(executor_detail::max_threads() * plan.max_accumulators));
  s->bases.resize(static_cast<size_t>(std::max(plan.max_externals, 1)));
  if (plan.max_tile_bytes > 0) {
    const int threads = executor_detail::max_threads();
    s->tile_stride = (plan.max_tile_bytes + 63) / 64 * 64;
    s->tile_storage.resize(static_cast<size_t>(threads * s->tile_stride / 8 + 8));
    const auto tile_addr = reinterpret_cast<uintptr_t>(s->tile_storage.data());
    s->tiles = reinterpret_cast<char*>(s->tile_storage.data()) + (64 - tile_addr % 64) % 64;
    s->tile_bases.resize(static_cast<size_t>(threads) * s->bases.size());
  }
  if (plan.max_replica_bytes > 0) {
    s->replica_storage.resize(static_cast<size_t>(plan.max_replica_bytes / 8 + 8));
    const auto replica_addr = reinterpret_cast<uintptr_t>(s->replica_storage.data());
    s->replicas = reinterpret_cast<char*>(s->replica_storage.data()) + (64 - replica_addr % 64) % 64;
  }
  s->in.reserve(static_cast<size_t>(plan.max_inputs));
  s->out.reserve(static_cast<size_t>(plan.max_outputs));
  s->side_in.resize(static_cast<size_t>(plan.max_side));
  s->side_out.resize(static_cast<size_t>(plan.max_side));
  for (int32_t t = 0; t < plan.max_side; ++t) {
    s->side_in[t].reserve(static_cast<size_t>(plan.max_inputs));
    s->side_out[t].reserve(static_cast<size_t>(plan.max_outputs));
  }
  return s;
}

void Executable::release(std::unique_ptr<State> s) const {
  State* expected = nullptr;
  if (fast_.compare_exchange_strong(expected, s.get(), std::memory_order_release)) {
    s.release();
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(std::move(s));
}

namespace executor_detail {

void run_broadcast(const FusedMember& m, char* out, const char* src, int64_t start, int64_t len);

// GCC auto-vectorises with 256-bit vectors on AVX-512 machines unless told otherwise; the long
// sum below is converts and adds only, and 512-bit ones took it from 11.6 to 7.8 µs per 65536 f32.
#if defined(__GNUC__) && !defined(__clang__) && defined(__AVX512F__)
#define FLUXION_WIDE_VECTORS __attribute__((target("prefer-vector-width=512")))
#else
#define FLUXION_WIDE_VECTORS
#endif

/// Where every partial sum starts: -0, the identity of IEEE addition, as eager sums (-0 + x is x for
/// every x; from +0 a sum of -0 values would be +0, where eager's is -0).
constexpr double kSumStart = -0.0;

/// Rows at least this long are summed in 32 lanes, rows from kMidSumRow in 8 (lane_sum), shorter
/// ones by short_sum (W8's rows of 2 or 10 spent half their time setting up and combining 32
/// partial sums; its rows of 32 were 15 % of the objective in short_sum's two add chains).
constexpr int64_t kWideSumRow = 64;
constexpr int64_t kMidSumRow = 16;

/// The sum of p[0, n) in double by kLanes partial sums combined pairwise at the end, so the inner
/// loop becomes vector converts and adds (f32 or f64) with kLanes / packet independent add chains.
/// Long rows (kWideSumRow) take 32 lanes (the four scalar sums this replaced were not vectorised:
/// 30 % of bench W1's function), rows from kMidSumRow take 8 (one or two vector adds per step).
template <int kLanes, class T>
FLUXION_WIDE_VECTORS double lane_sum(const T* p, int64_t n) {
  double s[kLanes];
  std::fill(s, s + kLanes, kSumStart);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) s[j] += static_cast<double>(p[i + j]);
  double tail = kSumStart;
  for (; i < n; ++i) tail += static_cast<double>(p[i]);
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j) s[j] += s[j + width];
  return s[0] + tail;
}

/// The sum of p[0, n) in double for short rows: two partial sums, inline.
template <class T>
inline double short_sum(const T* p, int64_t n) {
  double s0 = kSumStart, s1 = kSumStart;
  int64_t i = 0;
  for (; i + 2 <= n; i += 2) {
    s0 += static_cast<double>(p[i]);
    s1 += static_cast<double>(p[i + 1]);
  }
  if (i < n) s0 += static_cast<double>(p[i]);
  return s0 + s1;
}

/// Rows up to this long are summed by sum_short_rows, whole rows in one loop.
constexpr int64_t kShortRowMax = 4;

/// acc[0, rows) += the sums of `rows` consecutive rows of R elements at p (short_sum's order),
/// one loop with R fixed: W8's rows of 2 (d = 2) took a row's bookkeeping and a call each, 16 %
/// of its objective at K = 100.
template <int R, class T>
void sum_short_rows(const T* p, int64_t rows, double* acc) {
  for (int64_t r = 0; r < rows; ++r) acc[r] += short_sum(p + r * R, R);
}

#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)  // __builtin_shufflevector
#define FLUXION_EIGHT_ROW_SUMS 1
/// Rows of 8 to this many elements are summed eight at a time by sum_rows_by_8.
constexpr int64_t kEightRowMax = 64;
typedef double EightDoubles __attribute__((vector_size(64)));
typedef int64_t EightLongs __attribute__((vector_size(64)));

/// acc[0, rows) += the sums of `rows` consecutive rows of `row` (8 or more) elements at p, eight
/// rows at a time: one 8-lane accumulator per row, then a transpose-and-add tree puts the 8 sums
/// in one vector. A row's last `row % 8` elements come from the 8 that end the row, the lanes
/// already counted masked off (never a read outside the row). Per row this is row / 8 (+1)
/// vector adds and 21 / 8 shuffles or adds, against a whole lane_sum's setup and 8-lane combine
/// (rows of 32 and 64: W8's sums of squares, 11 % of its objective at d=32; rows of 10, added by
/// two scalar chains, were 26 % of its objective at d=10). A last group of fewer than 8 rows (a
/// tile row of W8's d=64,K=5 product holds 5) leaves the other accumulators at zero: lane_sum<32>
/// on each was 7.5 % of that objective.
template <class T>
FLUXION_WIDE_VECTORS void sum_rows_by_8(const T* p, int64_t row, int64_t rows, double* acc) {
  typedef T EightT __attribute__((vector_size(8 * sizeof(T))));
  const int64_t whole = row / 8 * 8, tail = row - whole;
  EightLongs keep, start;  // lanes of a row's last 8 elements not yet counted; kSumStart's bits
  for (int l = 0; l < 8; ++l) keep[l] = l >= 8 - tail ? -1 : 0;
  std::memcpy(&start, &kSumStart, sizeof(double));
  for (int l = 1; l < 8; ++l) start[l] = start[0];
  const EightLongs drop = start & ~keep;  // the lanes counted already read as kSumStart
  for (int64_t r0 = 0; r0 < rows; r0 += 8, p += 8 * row, acc += 8) {
    const int64_t count = std::min<int64_t>(8, rows - r0);
    EightDoubles a[8];
    for (int r = 0; r < 8; ++r) {
      EightDoubles sum = (EightDoubles)start;
      if (r < count) {
        const T* q = p + r * row;
        for (int64_t i = 0; i < whole; i += 8) {
          EightT v;
          std::memcpy(&v, q + i, sizeof v);
          sum += __builtin_convertvector(v, EightDoubles);
        }
        if (tail > 0) {
          EightT v;
          std::memcpy(&v, q + row - 8, sizeof v);
          sum += (EightDoubles)(((EightLongs)__builtin_convertvector(v, EightDoubles) & keep) | drop);
        }
      }
      a[r] = sum;
    }
    EightDoubles t[4], u[2];
    for (int k = 0; k < 4; ++k)  // pairs of lanes: [row 2k, row 2k+1] interleaved
      t[k] = __builtin_shufflevector(a[2 * k], a[2 * k + 1], 0, 8, 2, 10, 4, 12, 6, 14) +
             __builtin_shufflevector(a[2 * k], a[2 * k + 1], 1, 9, 3, 11, 5, 13, 7, 15);
    for (int k = 0; k < 2; ++k)  // quads: rows 4k..4k+3, then again for the upper half
      u[k] = __builtin_shufflevector(t[2 * k], t[2 * k + 1], 0, 1, 8, 9, 4, 5, 12, 13) +
             __builtin_shufflevector(t[2 * k], t[2 * k + 1], 2, 3, 10, 11, 6, 7, 14, 15);
    EightDoubles sums = __builtin_shufflevector(u[0], u[1], 0, 1, 2, 3, 8, 9, 10, 11) +
                        __builtin_shufflevector(u[0], u[1], 4, 5, 6, 7, 12, 13, 14, 15);
    if (count == 8) {
      EightDoubles old;
      std::memcpy(&old, acc, sizeof old);
      old += sums;
      std::memcpy(acc, &old, sizeof old);
    } else {
      for (int r = 0; r < count; ++r) acc[r] += sums[r];
    }
  }
}
#else
#define FLUXION_EIGHT_ROW_SUMS 0
#endif

/// Periods (whole groups of rows that fill whole vectors) of sums over a middle dim are added
/// by sum_periods when they are at most this long.
constexpr int64_t kMaxSumPeriod = 64;

/// acc[j % inner] += the sums of element j of `chunks` consecutive periods of P elements at p (P
/// a multiple of `inner` and of 8): P partial sums in registers, folded onto `inner` outputs at
/// the end. W8's gradient sums [K, n, d] over n: runs of d = 10 added one by one took 18 % of it.
template <int P, class T>
FLUXION_WIDE_VECTORS void sum_periods(const T* p, int64_t chunks, double* acc, int64_t inner) {
  double s[P];
  std::fill(s, s + P, kSumStart);
  for (int64_t c = 0; c < chunks; ++c)
    for (int j = 0; j < P; ++j) s[j] += static_cast<double>(p[c * P + j]);
  for (int j = 0; j < P; ++j) acc[j % inner] += s[j];
}

template <class T>
void sum_periods(const T* p, int64_t chunks, int64_t period, double* acc, int64_t inner) {
  switch (period / 8) {
    case 1: return sum_periods<8>(p, chunks, acc, inner);
    case 2: return sum_periods<16>(p, chunks, acc, inner);
    case 3: return sum_periods<24>(p, chunks, acc, inner);
    case 4: return sum_periods<32>(p, chunks, acc, inner);
    case 5: return sum_periods<40>(p, chunks, acc, inner);
    case 6: return sum_periods<48>(p, chunks, acc, inner);
    case 7: return sum_periods<56>(p, chunks, acc, inner);
    default: return sum_periods<64>(p, chunks, acc, inner);
  }
}

/// Adds elements [start, start + len) of a reduce member's operand (`src`: the block, or one
/// value when `one`) into its per-output sums `acc` (double, whatever the operand's float type).
void add_row_sums(const FusedMember& m, const char* src, bool one, double* acc, int64_t start, int64_t len) {
  dispatch_dtype(m.in_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T* x = reinterpret_cast<const T*>(src);
      if (m.layout.inner > 1) {  // runs of `inner` elements add into runs of outputs
        const int64_t inner = m.layout.inner, span = m.layout.row * inner;
        const int64_t period = std::lcm(inner, int64_t(8));
        int64_t outer = start / span, q = start % span, c = q % inner;  // q: position in the span
        for (int64_t done = 0; done < len;) {
          if (!one && c == 0 && period <= kMaxSumPeriod) {
            const int64_t chunks = std::min(len - done, span - q) / period;
            if (chunks > 0) {
              sum_periods(x + done, chunks, period, acc + outer * inner, inner);
              done += chunks * period, q += chunks * period;
              if (q == span) q = 0, ++outer;
              continue;
            }
          }
          const int64_t run = std::min(inner - c, len - done);
          double* a = acc + outer * inner + c;
          if (one) {
            for (int64_t i = 0; i < run; ++i) a[i] += static_cast<double>(x[0]);
          } else {
            for (int64_t i = 0; i < run; ++i) a[i] += static_cast<double>(x[done + i]);
          }
          done += run, q += run, c += run;
          if (c == inner) {
            c = 0;
            if (q == span) q = 0, ++outer;
          }
        }
        return;
      }
      const int64_t row = m.layout.row;
      int64_t r = start / row, c = start % row;
      for (int64_t done = 0; done < len; c = 0, ++r) {
        if (!one && c == 0 && row <= kShortRowMax && len - done >= row) {
          const int64_t rows = (len - done) / row;
          switch (row) {
            case 1: sum_short_rows<1>(x + done, rows, acc + r); break;
            case 2: sum_short_rows<2>(x + done, rows, acc + r); break;
            case 3: sum_short_rows<3>(x + done, rows, acc + r); break;
            default: sum_short_rows<4>(x + done, rows, acc + r); break;
          }
          done += rows * row;
          r += rows - 1;  // and the loop's ++r
          continue;
        }
#if FLUXION_EIGHT_ROW_SUMS
        if (!one && c == 0 && row >= 8 && row <= kEightRowMax && len - done >= 2 * row) {
          const int64_t rows = (len - done) / row;
          sum_rows_by_8(x + done, row, rows, acc + r);
          done += rows * row;
          r += rows - 1;  // and the loop's ++r
          continue;
        }
#endif
        const int64_t run = std::min(row - c, len - done);
        if (one) {
          acc[r] += static_cast<double>(x[0]) * static_cast<double>(run);
        } else {
          acc[r] += run >= kWideSumRow ? lane_sum<32>(x + done, run)
                   : run >= kMidSumRow ? lane_sum<8>(x + done, run)
                                       : short_sum(x + done, run);
        }
        done += run;
      }
    }
  });
}

/// Writes part `part` of `parts` (a share of each member's rows) of the row sums of a step's
/// reduce members, summed over `threads` accumulator sets.
void write_row_sums(const Step& step, char* const* bases, const double* accumulators, int64_t stride, int threads,
                    int part, int parts) {
  for (const FusedMember& m : step.members) {
    if (!m.reduce) continue;
    const int64_t r0 = m.layout.outputs * part / parts, r1 = m.layout.outputs * (part + 1) / parts;
    dispatch_dtype(m.out_dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* out = reinterpret_cast<T*>(bases[m.output.index]);
      if (threads == 1) {  // a plain conversion loop (W8 d=2: 100000 row sums)
        const double* acc = accumulators + m.acc;
        for (int64_t r = r0; r < r1; ++r) out[r] = static_cast<T>(acc[r]);
        return;
      }
      for (int64_t r = r0; r < r1; ++r) {
        double sum = kSumStart;
        for (int t = 0; t < threads; ++t) sum += accumulators[t * stride + m.acc + r];
        out[r] = static_cast<T>(sum);
      }
    });
  }
}

/// Runs members of a fused step over elements [e0, e1), in blocks of at most kBlock elements,
/// with `scratch` (slots x kBlock elements).
/// A scratch block holding one value repeated (a row of a broadcast along its last dims, or what
/// was computed from such values only) is kept as that one value: `uniform[slot]`, and readers
/// take it as a scalar operand. Outputs read outside the group are always written in full.
/// Members with rows operands run their row kernel, or their block kernel with those operands as
/// scalars when the block lies inside one run.
void run_fused_range(const Step& step, char* const* bases, double* scratch, double* accumulators, int64_t e0,
                     int64_t e1) {
  const void* in_ptrs[kMaxFusedInputs];
  bool in_scalar[kMaxFusedInputs], in_rows[kMaxFusedInputs];
  bool uniform[kMaxUniformSlots];
  const char* view[kMaxUniformSlots];  // periodic_views: a slot's block read in place, or nullptr
  const bool track = step.track_uniform, views = step.periodic_views;
  if (views) std::fill(view, view + step.scratch_slots, nullptr);
  for (int64_t start = e0; start < e1; start += kBlock) {
    const int64_t len = std::min(kBlock, e1 - start);
    if (track) std::fill(uniform, uniform + step.scratch_slots, false);
    // A member's output slot: its scratch block (no longer a view).
    auto out_ptr = [&](const FusedOperand& op) -> char* {
      if (op.source != FusedOperand::scratch) return bases[op.index] + start * op.itemsize;
      if (views) view[op.index] = nullptr;
      return reinterpret_cast<char*>(scratch + op.index * kBlock);
    };
    auto ptr = [&](const FusedOperand& op) -> char* {
      switch (op.source) {
        case FusedOperand::literal: return const_cast<char*>(static_cast<const char*>(op.literal_ptr));
        case FusedOperand::scratch:
          if (views && view[op.index]) return const_cast<char*>(view[op.index]);
          return reinterpret_cast<char*>(scratch + op.index * kBlock);
        case FusedOperand::rows: return bases[op.index] + start / op.row * op.itemsize;
        default: return bases[op.index] + (op.scalar ? 0 : start * op.itemsize);
      }
    };
    for (const FusedMember& m : step.members) {
      const bool to_scratch = track && m.output.source == FusedOperand::scratch;
      if (m.reduce) {
        const FusedOperand& op = m.inputs[0];
        const bool one = m.scalar[0] || (track && op.source == FusedOperand::scratch && uniform[op.index]);
        add_row_sums(m, ptr(op), one, accumulators + m.acc, start, len);
        continue;
      }
      if (m.broadcast) {  // the operand is external: its base pointer, not offset by the block
        const int64_t inner = m.bdims.back();
        const bool one_value = to_scratch && m.bsrc.back() == 0 && start % inner + len <= inner;
        const char* src = bases[m.inputs[0].index];
        if (views && m.period > 0 && m.output.source == FusedOperand::scratch) {
          const int64_t offset = start % m.period;
          const char* in_place = offset + len <= m.period      ? src
                                 : offset + len <= m.replica_len ? bases[m.replica]
                                                                 : nullptr;
          if (in_place) {
            view[m.output.index] = in_place + offset * m.output.itemsize;
            if (to_scratch) uniform[m.output.index] = false;
            continue;
          }
        }
        run_broadcast(m, out_ptr(m.output), src, start, one_value ? 1 : len);
        if (to_scratch) uniform[m.output.index] = one_value;
        continue;
      }
      if (!track && m.row == 0) {  // the plain path: nothing in this group is ever one repeated value
        for (int i = 0; i < m.num_inputs; ++i) in_ptrs[i] = ptr(m.inputs[i]);
        m.block(m.in_dtype, in_ptrs, m.scalar, out_ptr(m.output), len, m.out_dtype);
        continue;
      }
      // Row operands of a block inside one run are one value: scalars, as uniform blocks are.
      const bool one_run = m.row > 0 && start % m.row + len <= m.row;
      bool all_scalar = true, any_rows = false;
      for (int i = 0; i < m.num_inputs; ++i) {
        const FusedOperand& op = m.inputs[i];
        const bool row_op = op.source == FusedOperand::rows;
        in_ptrs[i] = ptr(op);
        in_rows[i] = row_op && !one_run;
        in_scalar[i] = m.scalar[i] || (row_op && one_run) ||
                       (track && op.source == FusedOperand::scratch && uniform[op.index]);
        all_scalar = all_scalar && in_scalar[i];
        any_rows = any_rows || in_rows[i];
      }
      if (any_rows) {
        m.row_block(m.in_dtype, in_ptrs, in_scalar, in_rows, m.row, start % m.row, out_ptr(m.output), len, m.out_dtype);
        if (to_scratch) uniform[m.output.index] = false;
        continue;
      }
      const bool one_value = to_scratch && all_scalar;
      m.block(m.in_dtype, in_ptrs, in_scalar, out_ptr(m.output), one_value ? 1 : len, m.out_dtype);
      if (to_scratch) uniform[m.output.index] = one_value;
    }
  }
}

/// Runs fused step `step`'s register program over elements [e0, e1): its whole tiles, then the
/// remainder by the block path; full sums are added into `accumulators` as run_fused_range does.
void run_program_range(const Step& step, char* const* bases, double* scratch, double* accumulators, int64_t e0,
                       int64_t e1) {
  constexpr int64_t kMaxTile = cpu::tile_elements<float>();
  alignas(64) double sums[kMaxTileSums * kMaxTile];
  int64_t whole = e0;
  dispatch_dtype(step.program_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T> && !kLightKernels) {
      constexpr int64_t tile = cpu::tile_elements<T>(), lanes = Eigen::internal::packet_traits<T>::size;
      whole = e0 + (e1 - e0) / tile * tile;
      if (whole == e0) return;
      const size_t n_sums = step.tile_sums.size();
      std::fill(sums, sums + n_sums * lanes, kSumStart);
      cpu::run_tile_program<T>(step.program.data(), static_cast<int>(step.program.size()), bases,
                               reinterpret_cast<T*>(scratch), sums, e0, whole);
      for (size_t k = 0; k < n_sums; ++k) {
        double total = kSumStart;
        for (int64_t l = 0; l < lanes; ++l) total += sums[k * lanes + l];
        accumulators[step.tile_sums[k]] += total;
      }
    }
  });
  if (whole < e1) run_fused_range(step, bases, scratch, accumulators, whole, e1);
}

/// `run` elements of S bytes from `src` with element stride `step` (0: one value repeated).
template <int S>
inline void copy_run(char* o, const char* src, int64_t run, int64_t step) {
  using Bits = std::conditional_t<S == 1, uint8_t, std::conditional_t<S == 2, uint16_t,
               std::conditional_t<S == 4, uint32_t, uint64_t>>>;
  Bits* ob = reinterpret_cast<Bits*>(o);
  if (step == 1) {
    std::memcpy(o, src, static_cast<size_t>(run) * S);
  } else if (step == 0) {  // a typed fill, so that the compiler vectorises it
    Bits v;
    std::memcpy(&v, src, S);
    switch (run) {  // short runs (each element repeated 2-4 times) skip the vector loop's set-up
      case 1: ob[0] = v; break;
      case 2: ob[0] = ob[1] = v; break;
      case 3: ob[0] = ob[1] = ob[2] = v; break;
      case 4: ob[0] = ob[1] = ob[2] = ob[3] = v; break;
      default:
        for (int64_t i = 0; i < run; ++i) ob[i] = v;
    }
  } else {
    for (int64_t i = 0; i < run; ++i) std::memcpy(ob + i, src + i * step * S, S);
  }
}

/// Elements [start, start + len) of a broadcast member's output, S bytes each.
template <int S>
void broadcast_block(char* out, const char* src, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                     int64_t start, int64_t len) {
  const int nd = static_cast<int>(dims.size());
  const int64_t inner = dims.back(), step = strides.back();
  // Rows repeat along dim nd-2 when its stride is 0: those are copied from the output itself.
  const bool rows_repeat = nd >= 2 && strides[static_cast<size_t>(nd - 2)] == 0;
  if (nd == 1 || (nd == 2 && !rows_repeat)) {  // the common case after coalescing: rows of a matrix
    const int64_t outer_stride = nd == 2 ? strides[0] : 0;
    int64_t row = start / inner, col = start % inner;
    for (int64_t done = 0; done < len; col = 0, ++row) {
      const int64_t run = std::min(inner - col, len - done);
      copy_run<S>(out + done * S, src + (row * outer_stride + col * step) * S, run, step);
      done += run;
    }
    return;
  }
  int64_t idx[8];
  int64_t soff = 0, rem = start;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % dims[static_cast<size_t>(d)];
    rem /= dims[static_cast<size_t>(d)];
    soff += idx[d] * strides[static_cast<size_t>(d)];
  }
  // Advances the index from dim `from` down (a carry), keeping soff the source offset.
  auto carry = [&](int from) {
    for (int d = from; d >= 0; --d) {
      soff += strides[static_cast<size_t>(d)];
      if (++idx[d] < dims[static_cast<size_t>(d)]) break;
      soff -= dims[static_cast<size_t>(d)] * strides[static_cast<size_t>(d)];
      idx[d] = 0;
    }
  };
  for (int64_t done = 0; done < len;) {
    if (rows_repeat && idx[nd - 1] == 0 && idx[nd - 2] > 0 && done >= inner) {
      // The row before this one (already written) has the same source: copy whole rows from it,
      // doubling the copied span each time (log2 rows copies instead of one per row).
      const int64_t rows = std::min(dims[static_cast<size_t>(nd - 2)] - idx[nd - 2], (len - done) / inner);
      if (rows > 0) {
        char* base = out + (done - inner) * S;
        const size_t row_bytes = static_cast<size_t>(inner) * S;
        for (int64_t have = 1, need = rows; need > 0;) {
          const int64_t c = std::min(have, need);
          std::memcpy(base + static_cast<size_t>(have) * row_bytes, base, static_cast<size_t>(c) * row_bytes);
          have += c;
          need -= c;
        }
        done += rows * inner;
        idx[nd - 2] += rows - 1;  // the carry below adds the last one (stride 0: soff unchanged)
        carry(nd - 2);
        continue;
      }
    }
    const int64_t run = std::min(inner - idx[nd - 1], len - done);
    copy_run<S>(out + done * S, src + soff * S, run, step);
    done += run;
    idx[nd - 1] += run;
    soff += run * step;
    if (idx[nd - 1] < inner) continue;
    soff -= inner * step;
    idx[nd - 1] = 0;
    carry(nd - 2);
  }
}

void run_broadcast(const FusedMember& m, char* out, const char* src, int64_t start, int64_t len) {
  switch (m.output.itemsize) {
    case 1: broadcast_block<1>(out, src, m.bdims, m.bsrc, start, len); break;
    case 2: broadcast_block<2>(out, src, m.bdims, m.bsrc, start, len); break;
    case 4: broadcast_block<4>(out, src, m.bdims, m.bsrc, start, len); break;
    default: broadcast_block<8>(out, src, m.bdims, m.bsrc, start, len); break;
  }
}

}  // namespace executor_detail

namespace executor_detail {

/// Runs the fused group of tiles [u0, u1) of its tiled product (see Step::tiled): each tile is
/// computed into `tile`, then the group runs on its rows, reading the product's elements there.
void run_tiles(const Step& step, const std::vector<Tensor>& product_inputs, char** bases, char* tile, double* scratch,
               double* accumulators, int64_t u0, int64_t u1) {
  const int64_t m = step.tile_plan.m, n = step.tile_plan.n, isz = step.tiled_itemsize;
  const int64_t col_tiles = (n + step.tile_cols - 1) / step.tile_cols;
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t r0 = u / col_tiles * step.tile_rows, c0 = u % col_tiles * step.tile_cols;
    const int64_t r1 = std::min(r0 + step.tile_rows, m), ld = std::min(c0 + step.tile_cols, n) - c0;
    step.tile(step.tile_plan, product_inputs, r0, r1, c0, c0 + ld, tile, ld);
    if (ld == n) {
      // A tile of whole rows is the product's elements [r0 n, r1 n) in order: one range, in
      // blocks, instead of a call per row (W8's d=32,K=5 objective, rows of 160: the per-row
      // calls of its subtract, square and row sums were a third of the run).
      bases[step.tiled_external] =
          reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(tile) - static_cast<uintptr_t>(r0 * n * isz));
      run_fused_range(step, bases, scratch, accumulators, r0 * n, r1 * n);
      continue;
    }
    for (int64_t r = r0; r < r1; ++r) {
      // Members address the product's element e at base + e * isz: shift the base so that the
      // elements of this row, [r n + c0, r n + c0 + ld), are the tile's row r - r0.
      const int64_t start = r * n + c0;
      const uintptr_t row = reinterpret_cast<uintptr_t>(tile + (r - r0) * ld * isz);
      bases[step.tiled_external] = reinterpret_cast<char*>(row - static_cast<uintptr_t>(start * isz));
      run_fused_range(step, bases, scratch, accumulators, start, start + ld);
    }
  }
}

/// Fills the replicas of `step`'s periodic members (their operands' bases set) at `storage` and
/// points their bases there.
void build_replicas(const Step& step, char** bases, char* storage) {
  for (const FusedMember& m : step.members) {
    if (m.replica < 0) continue;
    const char* src = bases[m.inputs[0].index];
    const auto period_bytes = static_cast<size_t>(m.period * m.output.itemsize);
    for (int64_t done = 0; done < m.replica_len; done += m.period)
      std::memcpy(storage + done * m.output.itemsize, src, period_bytes);
    bases[m.replica] = storage;
    storage += (m.replica_len * m.output.itemsize + 63) / 64 * 64;
  }
}

/// Runs a fused step (its externals' bases set in s.bases): its blocks, or the tiles of its
/// tiled product, split evenly over the threads.
void run_fused_step(const Step& step, const Executable::Plan& plan, Executable::State& s) {
  const int64_t per_thread = static_cast<int64_t>(plan.max_scratch) * kBlock;
  const int64_t acc_stride = plan.max_accumulators;
  int64_t units = (step.n + kBlock - 1) / kBlock;
  if (step.tiled) {
    for (const Atom& a : step.tiled->inputs) s.in.push_back(a.is_literal() ? a.literal : s.values[a.var]);
    units = (step.tile_plan.m + step.tile_rows - 1) / step.tile_rows *
            ((step.tile_plan.n + step.tile_cols - 1) / step.tile_cols);
  }
  int threads = 1;
#ifdef _OPENMP
  threads = std::min<int>(max_threads(), static_cast<int>(s.scratch_size / std::max<int64_t>(per_thread, 1)));
  if (step.n < kParallelElements) threads = 1;
  threads = static_cast<int>(std::min<int64_t>(threads, units));
#endif
  // Each thread clears its own accumulator set, and after a barrier writes a share of the sums
  // (W8 d=2 has 100000 row sums: cleared and combined on one thread they cost more than the
  // second thread saved).
  auto work = [&](int t, int nt) {
    double* scratch = s.scratch + t * per_thread;
    double* acc = s.accumulators.data() + t * acc_stride;
    std::fill(acc, acc + step.accumulators, kSumStart);
    const int64_t u0 = units * t / nt, u1 = units * (t + 1) / nt;
    if (!step.tiled) {
      const int64_t e0 = u0 * kBlock, e1 = std::min(u1 * kBlock, step.n);
      if (!step.program.empty()) run_program_range(step, s.bases.data(), scratch, acc, e0, e1);
      else run_fused_range(step, s.bases.data(), scratch, acc, e0, e1);
      return;
    }
    char** bases = s.tile_bases.data() + static_cast<size_t>(t) * s.bases.size();
    std::copy(s.bases.begin(), s.bases.end(), bases);
    run_tiles(step, s.in, bases, s.tiles + t * s.tile_stride, scratch, acc, u0, u1);
  };
  auto sums = [&](int part, int parts) {
    if (step.accumulators > 0) write_row_sums(step, s.bases.data(), s.accumulators.data(), acc_stride, parts, part, parts);
  };
#ifdef _OPENMP
  if (threads > 1) {
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      work(t, nt);
      if (step.accumulators > 0) {
#pragma omp barrier
        sums(t, nt);
      }
    }
  } else
#endif
  {
    work(0, 1);
    sums(0, 1);
  }
  s.in.clear();
}

/// Runs kernel step `step` on the values of `s`, through the argument lists `in` and `out`
/// (empty on entry and on return; reserved, so that no call allocates).
void run_kernel_step(const Step& step, const Executable::State& s, std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Equation& e = *step.eqn;
  for (const Atom& a : e.inputs) in.push_back(a.is_literal() ? a.literal : s.values[a.var]);
  for (int32_t v : e.outputs) out.push_back(s.values[v]);
  struct Clear {
    std::vector<Tensor>& in;
    std::vector<Tensor>& out;
    ~Clear() { in.clear(), out.clear(); }
  } clear{in, out};
  step.fn(in, *e.params, out);
}

/// Runs a side-by-side step's rounds. A round of several parts runs them on as many threads, each
/// kernel on its thread alone (cpu::kernel_threads() is 1 there); the first exception a part
/// throws is rethrown once the round has finished.
void run_side_by_side(const Step& step, Executable::State& s) {
  size_t first = 0;
  for (int32_t round : step.rounds) {
    if (round == 1) {
      run_kernel_step(step.parts[first], s, s.in, s.out);
      ++first;
      continue;
    }
#ifdef _OPENMP
    std::exception_ptr failure;
#pragma omp parallel num_threads(round)
    {
      const int t = omp_get_thread_num();
      // A smaller team than asked for (nested in a caller's parallel region, or OpenMP's thread
      // limit) runs the remaining parts on its threads in turn.
      for (int p = t; p < round; p += omp_get_num_threads()) {
        try {
          run_kernel_step(step.parts[first + p], s, s.side_in[t], s.side_out[t]);
        } catch (...) {
#pragma omp critical(fluxion_side_by_side)
          if (!failure) failure = std::current_exception();
        }
      }
    }
    if (failure) std::rethrow_exception(failure);
#else
    for (int p = 0; p < round; ++p) run_kernel_step(step.parts[first + p], s, s.in, s.out);
#endif
    first += static_cast<size_t>(round);
  }
}

}  // namespace executor_detail

void Executable::run(const std::vector<Tensor>& args, std::vector<Tensor>& outs) const {
  const Jaxpr& j = *jaxpr_;
  const Plan& plan = *plan_;
  if (args.size() != j.invars.size())
    detail::fail<Error>("jit", "the plan takes ", j.invars.size(), " inputs, got ", args.size(),
                        ". Call the jit'd function with the arguments it was traced with.");
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].aval() != j.avals[j.invars[i]])
      detail::fail<ShapeError>("jit", "input ", i, " is ", args[i].aval(), " but the plan was traced for ",
                               j.avals[j.invars[i]], ".");
  run_unchecked(args, outs);
}

void Executable::run_unchecked(const std::vector<Tensor>& args, std::vector<Tensor>& outs) const {
  const std::vector<int32_t>& invars = jaxpr_->invars;
  run_bound([&](State& s) {
    for (size_t i = 0; i < args.size(); ++i) s.values[invars[i]] = args[i];
  }, outs);
}

void Executable::run_unchecked(std::vector<Tensor>&& args, std::vector<Tensor>& outs) const {
  const std::vector<int32_t>& invars = jaxpr_->invars;
  run_bound([&](State& s) {
    for (size_t i = 0; i < args.size(); ++i) s.values[invars[i]] = std::move(args[i]);
  }, outs);
}

template <class BindArgs>
void Executable::run_bound(const BindArgs& bind_args, std::vector<Tensor>& outs) const {
  const Jaxpr& j = *jaxpr_;
  const Plan& plan = *plan_;
  std::unique_ptr<State> state = acquire();
  State& s = *state;
  // Give the state back (and drop references to the caller's tensors) even when a kernel throws.
  struct Restore {
    const Executable* self;
    std::unique_ptr<State>& st;
    const Jaxpr& j;
    const Plan& plan;
    ~Restore() {
      for (int32_t v : j.invars) st->values[v] = Tensor();
      for (int32_t v : plan.dynamic_views) {
        st->values[v] = Tensor();
        // Drop the caller's bytes unless the view went out as a result (then it is not reused).
        if (st->view_impls[v] && st->view_impls[v].use_count() == 1) st->view_impls[v]->rebind(nullptr);
      }
      st->in.clear();
      st->out.clear();
      self->release(std::move(st));
    }
  } restore{this, state, j, plan};
  bind_args(s);
  for (int32_t v : plan.output_vars) {
    Tensor& t = s.values[v];
    const auto& array = static_cast<const ArrayImpl&>(*t.impl());
    if (t.impl().use_count() != 1 || array.buffer().use_count() != 1) t = empty(j.avals[v], plan.device);
  }
  for (const Step& step : plan.steps) {
    switch (step.type) {
      case Step::kernel: executor_detail::run_kernel_step(step, s, s.in, s.out); break;
      case Step::side_by_side: executor_detail::run_side_by_side(step, s); break;
      case Step::fused: {
        for (size_t k = 0; k < step.externals.size(); ++k)
          if (static_cast<int32_t>(k) != step.tiled_external)
            s.bases[k] = static_cast<char*>(s.values[step.externals[k]].array("jit").data());
        if (step.replicas > 0) executor_detail::build_replicas(step, s.bases.data(), s.replicas);
        executor_detail::run_fused_step(step, plan, s);
        break;
      }
      case Step::dynamic_view: {
        const Equation& e = *step.eqn;
        const int32_t v = e.outputs[0];
        const std::shared_ptr<Buffer>& bytes = s.values[e.inputs[0].var].array("jit").buffer();
        std::shared_ptr<ArrayImpl>& impl = s.view_impls[v];
        if (impl && impl.use_count() == 1) impl->rebind(bytes);
        else impl = std::make_shared<ArrayImpl>(j.avals[v], bytes);
        s.values[v] = Tensor(impl);
        break;
      }
      case Step::nothing: break;
    }
  }
  outs.clear();
  for (const Atom& a : j.outputs) outs.push_back(a.is_literal() ? a.literal : s.values[a.var]);
}

std::string Executable::describe() const {
  const Plan& plan = *plan_;
  std::ostringstream os;
  int fused = 0, kernels = 0;
  for (const Step& step : plan.steps) {
    if (step.type == Step::fused) {
      ++fused;
      const auto reductions = std::count_if(step.members.begin(), step.members.end(), [](const FusedMember& m) { return m.reduce; });
      os << "fused[" << step.members.size() + step.row_broadcasts << " ops, n=" << step.n
         << ", scratch=" << step.scratch_slots;
      if (reductions > 0) os << ", " << reductions << " row sums";
      if (step.row_broadcasts > 0) os << ", " << step.row_broadcasts << " broadcasts read by rows";
      if (step.replicas > 0) os << ", " << step.replicas << " periodic replicas";
      if (!step.program.empty() && !step.tiled) os << ", register program of " << step.program.size() << " instructions";
      if (step.tiled)
        os << ", " << step.tiled->primitive->name << " " << step.tile_plan.m << "x" << step.tile_plan.n << " in "
           << step.tile_rows << "x" << step.tile_cols << " tiles";
      os << "]\n";
      if (!step.program.empty() && !step.tiled) {
        os << " ";
        for (const cpu::TileInstr& in : step.program) os << " " << cpu::describe(in) << ";";
        os << "\n";
      }
    } else if (step.type == Step::kernel) {
      ++kernels;
      os << step.eqn->primitive->name << "\n";
    } else if (step.type == Step::side_by_side) {
      // A round of several parts on one line: "side by side[dot_general | dot_general]".
      size_t first = 0;
      for (int32_t round : step.rounds) {
        if (round > 1) os << "side by side[";
        for (int32_t p = 0; p < round; ++p) os << (p ? " | " : "") << step.parts[first + p].eqn->primitive->name;
        os << (round > 1 ? "]\n" : "\n");
        first += static_cast<size_t>(round);
      }
      kernels += static_cast<int>(step.parts.size());
    }
  }
  os << kernels << " kernels, " << fused << " fused groups, " << plan.buffer_bytes.size() << " pooled buffers ("
     << intermediate_bytes() << " bytes)\n";
  return os.str();
}

int64_t Executable::intermediate_bytes() const {
  int64_t total = 0;
  for (int64_t b : plan_->buffer_bytes) total += b;
  return total;
}

std::shared_ptr<const Executable> compile_jaxpr(const Jaxpr& traced, Device device) {
  auto optimized = std::make_shared<const Jaxpr>(passes::optimize_for_execution(traced));
  auto exe = std::make_shared<const Executable>(optimized, device);
  // The same debug switch as the passes: show the plan the executor will run.
  static const bool dump = std::getenv("FLUXION_DUMP_PASSES") != nullptr;
  if (dump) std::cerr << "-- plan --\n" << exe->describe();
  return exe;
}

}  // namespace fluxion
