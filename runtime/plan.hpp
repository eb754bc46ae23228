/// The device-neutral plan of a jit'd Jaxpr: its steps (kernel calls, fused groups, side-by-side
/// rounds, views), how each variable gets its storage, and the buffers shared by liveness. Made
/// once by the planning stages (runtime/), run many times by a backend's PlanRunner (backend.hpp).
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "fluxion/jaxpr.hpp"
#include "fluxion/primitive.hpp"
#include "runtime/fusion.hpp"

namespace fluxion::runtime {

inline constexpr int64_t kBlock = 1024;                // elements per fused block (8 KiB of f64)
inline constexpr int64_t kParallelElements = 1 << 16;  // fused groups this large use every thread
inline constexpr int kMaxFusedInputs = 4;              // fusible() admits no more
inline constexpr int kMaxUniformSlots = 64;            // scratch slots whose one-value state the block loop tracks

/// Threads a large fused group or a side-by-side round may use (fluxion::num_threads). Read at plan time (tile shapes, rounds) and by the runner (per-thread scratch).
int max_threads();

/// The matrix view of a product's output for tiling: an m x n row-major matrix, each element
/// reading k elements of each operand (its contraction). m == 0: not tiled.
struct TileView {
  int64_t m = 0, n = 0, k = 0;
};

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

/// An operand of a fused member: an external variable (its pointer is resolved per call), a
/// literal, a scratch slot of the block, or the rows of a broadcast along trailing dims: the
/// broadcast's external operand, one value per run of `row` elements.
/// (Fields ordered for packing: 32 bytes; a plan holds five per fused member.)
struct FusedOperand {
  enum Source : uint8_t { external, literal, scratch, rows } source = external;
  bool scalar = false;  // rank-0: broadcast over the block
  int32_t index = 0;    // position in the step's external list, or scratch slot
  int32_t itemsize = 0;
  int64_t row = 0;  // rows: elements per value
  const void* literal_ptr = nullptr;
};

/// One equation of a fused group, as the block loop runs it.
struct FusedMember {
  const Equation* eqn = nullptr;  // the equation it runs (its primitive: the backend's lowering)
  // A broadcast_in_dim member fills its block from its operand (inputs[0]) by index mapping:
  // output dims `bdims` (coalesced, at most 8) read the operand with element strides `bsrc`.
  bool broadcast = false;
  std::vector<int64_t> bdims, bsrc;
  // > 0: the broadcast repeats its whole operand (contiguous, `period` elements) along leading
  // dims; a block inside one repetition is read from the operand in place (no copy).
  int64_t period = 0;
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

/// What a backend's lowering attaches to a step (PlanRunner::lower): the CPU's register program,
/// a generated kernel. Opaque to planning.
struct StepLowering {
  virtual ~StepLowering() = default;
};

/// One step of the plan, run in order.
struct Step {
  enum Type : uint8_t { kernel, fused, dynamic_view, nothing, side_by_side } type = nothing;
  const Equation* eqn = nullptr;  // kernel and dynamic_view; views and tiled products (nothing)
  Kernel fn = nullptr;            // kernel: the primitive's kernel for the plan's backend
  // Fused groups.
  std::vector<const Equation*> group;  // the group's equations in program order
  int64_t n = 0;
  std::vector<int32_t> externals;  // variables whose base pointers the members use
  std::vector<FusedMember> members;
  int32_t scratch_slots = 0;
  int64_t accumulators = 0;    // doubles per thread for the reduce members' row sums
  int32_t row_broadcasts = 0;  // broadcast members never run: every reader reads their rows
  // Whether blocks of one repeated value can occur (a broadcast along the last dim, or a member
  // reading one per row, writing scratch): only then does the block loop track them (it costs per
  // member).
  bool track_uniform = false;
  bool periodic_views = false;  // some broadcast member has a period (and scratch_slots <= kMaxUniformSlots)
  // A product computed by tiles inside this group (Lowering::tile_view): its output is the group's
  // external `tiled_external`, never stored whole; each tile_rows x tile_cols tile of its m x n
  // matrix view is written to a per-thread buffer and the group runs on that tile's elements
  // while they are in cache (a large product otherwise written, zero-filled and read back per
  // call; measured: bench/RESULTS.md).
  const Equation* tiled = nullptr;
  TileView tile_view;
  int32_t tiled_external = -1;
  int32_t tiled_itemsize = 0;
  int64_t tile_rows = 0, tile_cols = 0;
  // The backend's lowering of this fused step (PlanRunner::lower: its kernels), or null.
  std::shared_ptr<const StepLowering> lowering;
  // Side by side (plan_side_by_side): mutually independent kernel steps, run in rounds of
  // `rounds[r]` consecutive parts; a round of several runs one part per thread (each kernel on
  // one thread), a round of one runs its part alone with every thread.
  std::vector<Step> parts;
  std::vector<int32_t> rounds;
};

/// The whole plan of one Jaxpr for one device.
struct Plan {
  const Jaxpr* jaxpr = nullptr;  // owned by the Executable, outlives the plan
  Device device;
  Backend backend = Backend::cpu;
  std::vector<Kind> kind;             // by variable
  std::vector<int32_t> buffer_of;     // intermediate -> logical buffer
  std::vector<int32_t> view_source;   // stable/dynamic views -> viewed variable
  std::vector<Tensor> fixed;          // constants and views of literals, by variable
  std::vector<int64_t> buffer_bytes;  // logical buffers' capacities
  std::vector<Step> steps;
  std::vector<int32_t> output_vars;    // variables of Kind::output
  std::vector<int32_t> dynamic_views;  // cleared after each call
  int32_t max_scratch = 0;
  int64_t max_accumulators = 0;
  int32_t max_externals = 0;
  int32_t max_inputs = 0, max_outputs = 0;
  int64_t max_tile_bytes = 0;  // one tile buffer (per thread)
  int32_t max_side = 0;        // most kernels a side-by-side round runs at once
};

/// What each step defines and reads, for buffer liveness; the stages that merge or empty steps
/// (tiles, side by side) keep it in step with Plan::steps.
struct StepUses {
  std::vector<std::vector<int32_t>> defs, reads;  // by step
  std::vector<bool> in_place;                     // by step: may write an output over an input dying there
};

inline int32_t itemsize_of(DType d) { return static_cast<int32_t>(dtype_size(d)); }

}  // namespace fluxion::runtime
