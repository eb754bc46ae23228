// The CPU plan runner: the step loop, fused steps over blocks, register programs or tiles split
// over the threads, kernel steps, side-by-side rounds. The block loop (run_fused_range) and the
// row-sum and broadcast kernels it calls (row_sums.hpp, broadcast_copy.hpp) share this
// translation unit so that they inline as they did in one file.
#include "backends/cpu/plan_runner.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <sstream>
#include <type_traits>

#include "backends/cpu/broadcast_copy.hpp"
#include "backends/cpu/kernel_threads.hpp"
#include "backends/cpu/row_sums.hpp"
#include "backends/cpu/thread_pool.hpp"
#include "backends/cpu/tile_program_compiler.hpp"
#include "runtime/switches.hpp"
#include "transforms/half_kernels.hpp"

namespace fluxion::cpu {

namespace plan_runner_detail {

using runtime::FusedMember;
using runtime::FusedOperand;
using runtime::kBlock;
using runtime::kMaxFusedInputs;
using runtime::kMaxUniformSlots;
using runtime::kParallelElements;
using runtime::Plan;
using runtime::RunState;
using runtime::Step;

/// The CPU runner's memory per state: per-thread scratch blocks, row-sum accumulators and tile
/// buffers, the externals' base pointers, the side-by-side argument lists.
struct CpuWorkspace : runtime::Workspace {
  std::vector<double> scratch_storage;  // threads x slots x kBlock elements (8 bytes each), + slack
  double* scratch = nullptr;            // scratch_storage aligned to 64 bytes: Eigen's block kernels
                                        // peel unaligned heads with scalar code (scalar exp/tanh)
  size_t scratch_size = 0;              // usable elements at `scratch`
  std::vector<double> accumulators;     // threads x plan.max_accumulators row sums
  std::vector<char*> bases;
  std::vector<std::vector<Tensor>> side_in, side_out;  // by thread, for side-by-side rounds
  std::vector<double> tile_storage;                    // threads x tile_stride bytes, for tiled products
  char* tiles = nullptr;                               // tile_storage aligned to 64 bytes
  int64_t tile_stride = 0;                             // bytes per thread: max_tile_bytes rounded up to 64
  std::vector<char*> tile_bases;                       // threads x bases.size(): each thread's bases while tiling
};

std::unique_ptr<CpuWorkspace> make_cpu_workspace(const Plan& plan) {
  auto w = std::make_unique<CpuWorkspace>();
  w->scratch_size = static_cast<size_t>(runtime::max_threads() * std::max(plan.max_scratch, 1) * kBlock);
  w->scratch_storage.resize(w->scratch_size + 8);
  const auto addr = reinterpret_cast<uintptr_t>(w->scratch_storage.data());
  w->scratch = w->scratch_storage.data() + ((64 - addr % 64) % 64) / sizeof(double);
  w->accumulators.resize(static_cast<size_t>(runtime::max_threads() * plan.max_accumulators));
  w->bases.resize(static_cast<size_t>(std::max(plan.max_externals, 1)));
  if (plan.max_tile_bytes > 0) {
    const int threads = runtime::max_threads();
    w->tile_stride = (plan.max_tile_bytes + 63) / 64 * 64;
    w->tile_storage.resize(static_cast<size_t>(threads * w->tile_stride / 8 + 8));
    const auto tile_addr = reinterpret_cast<uintptr_t>(w->tile_storage.data());
    w->tiles = reinterpret_cast<char*>(w->tile_storage.data()) + (64 - tile_addr % 64) % 64;
    w->tile_bases.resize(static_cast<size_t>(threads) * w->bases.size());
  }
  w->side_in.resize(static_cast<size_t>(plan.max_side));
  w->side_out.resize(static_cast<size_t>(plan.max_side));
  for (int32_t t = 0; t < plan.max_side; ++t) {
    w->side_in[t].reserve(static_cast<size_t>(plan.max_inputs));
    w->side_out[t].reserve(static_cast<size_t>(plan.max_outputs));
  }
  return w;
}

/// Runs members of a fused step over elements [e0, e1), in blocks of at most kBlock elements,
/// with `scratch` (slots x kBlock elements).
/// A scratch block holding one value repeated (a row of a broadcast along its last dims, or what
/// was computed from such values only) is kept as that one value: `uniform[slot]`, and readers
/// take it as a scalar operand. Outputs read outside the group are always written in full.
/// Members with rows operands run their row kernel, or their block kernel with those operands as
/// scalars when the block lies inside one run.
void run_fused_range(const Step& step, const FusedLowering& lowering, char* const* bases, double* scratch,
                     double* accumulators, int64_t e0, int64_t e1) {
  const FusedLowering::Member* kernels = lowering.members.data();
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
    for (size_t mi = 0; mi < step.members.size(); ++mi) {
      const FusedMember& m = step.members[mi];
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
          if (offset + len <= m.period) {
            view[m.output.index] = src + offset * m.output.itemsize;
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
        kernels[mi].block(m.in_dtype, in_ptrs, m.scalar, out_ptr(m.output), len, m.out_dtype);
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
        in_scalar[i] =
            m.scalar[i] || (row_op && one_run) || (track && op.source == FusedOperand::scratch && uniform[op.index]);
        all_scalar = all_scalar && in_scalar[i];
        any_rows = any_rows || in_rows[i];
      }
      if (any_rows) {
        kernels[mi].row_block(m.in_dtype, in_ptrs, in_scalar, in_rows, m.row, start % m.row, out_ptr(m.output), len,
                              m.out_dtype);
        if (to_scratch) uniform[m.output.index] = false;
        continue;
      }
      const bool one_value = to_scratch && all_scalar;
      kernels[mi].block(m.in_dtype, in_ptrs, in_scalar, out_ptr(m.output), one_value ? 1 : len, m.out_dtype);
      if (to_scratch) uniform[m.output.index] = one_value;
    }
  }
}

/// Runs fused step `step`'s register program over elements [e0, e1): its whole tiles, then the
/// remainder by the block path; full sums are added into `accumulators` as run_fused_range does.
void run_program_range(const Step& step, const FusedLowering& lowering, char* const* bases, double* scratch,
                       double* accumulators, int64_t e0, int64_t e1) {
  constexpr int64_t kMaxTile = tile_elements<float>();
  alignas(64) double sums[kMaxTileSums * kMaxTile];
  int64_t whole = e0;
  dispatch_dtype(lowering.program_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T> && !kLightKernels) {
      constexpr int64_t tile = tile_elements<T>(), lanes = Eigen::internal::packet_traits<T>::size;
      whole = e0 + (e1 - e0) / tile * tile;
      if (whole == e0) return;
      const size_t n_sums = lowering.tile_sums.size();
      std::fill(sums, sums + n_sums * lanes, kSumStart);
      run_tile_program<T>(lowering.program.data(), static_cast<int>(lowering.program.size()), bases,
                          reinterpret_cast<T*>(scratch), sums, e0, whole);
      for (size_t k = 0; k < n_sums; ++k) {
        double total = kSumStart;
        for (int64_t l = 0; l < lanes; ++l) total += sums[k * lanes + l];
        accumulators[lowering.tile_sums[k]] += total;
      }
    }
  });
  if (whole < e1) run_fused_range(step, lowering, bases, scratch, accumulators, whole, e1);
}

/// Runs the fused group of tiles [u0, u1) of its tiled product (see Step::tiled): each tile is
/// computed into `tile`, then the group runs on its rows, reading the product's elements there.
void run_tiles(const Step& step, const FusedLowering& lowering, const std::vector<Tensor>& product_inputs, char** bases,
               char* tile, double* scratch, double* accumulators, int64_t u0, int64_t u1) {
  const int64_t m = step.tile_view.m, n = step.tile_view.n, isz = step.tiled_itemsize;
  const int64_t col_tiles = (n + step.tile_cols - 1) / step.tile_cols;
  for (int64_t u = u0; u < u1; ++u) {
    const int64_t r0 = u / col_tiles * step.tile_rows, c0 = u % col_tiles * step.tile_cols;
    const int64_t r1 = std::min(r0 + step.tile_rows, m), ld = std::min(c0 + step.tile_cols, n) - c0;
    lowering.tile(lowering.tile_plan, product_inputs, r0, r1, c0, c0 + ld, tile, ld);
    if (ld == n) {
      // A tile of whole rows is the product's elements [r0 n, r1 n) in order: one range, in
      // blocks, instead of a call per row (short rows would pay the members' per-call costs once
      // per row; measured: bench/RESULTS.md).
      bases[step.tiled_external] =
          reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(tile) - static_cast<uintptr_t>(r0 * n * isz));
      run_fused_range(step, lowering, bases, scratch, accumulators, r0 * n, r1 * n);
      continue;
    }
    for (int64_t r = r0; r < r1; ++r) {
      // Members address the product's element e at base + e * isz: shift the base so that the
      // elements of this row, [r n + c0, r n + c0 + ld), are the tile's row r - r0.
      const int64_t start = r * n + c0;
      const uintptr_t row = reinterpret_cast<uintptr_t>(tile + (r - r0) * ld * isz);
      bases[step.tiled_external] = reinterpret_cast<char*>(row - static_cast<uintptr_t>(start * isz));
      run_fused_range(step, lowering, bases, scratch, accumulators, start, start + ld);
    }
  }
}

/// Runs a fused step (its externals' bases set in w.bases): its blocks, or the tiles of its
/// tiled product, over the thread pool. Scratch, tile buffers and tile bases are per worker.
/// Without sums, the units are claimed in chunks (a late thread leaves only its chunk to wait
/// for). With sums, the units are cut into one part per thread, each with its own accumulator
/// set, so that every row's sum adds the same partial sums in the same order whichever thread
/// runs which part; a second loop then writes a share of the sums per part.
void run_fused_step(const Step& step, const Plan& plan, RunState& s, CpuWorkspace& w) {
  const auto& lowering = static_cast<const FusedLowering&>(*step.lowering);
  const int64_t per_thread = static_cast<int64_t>(plan.max_scratch) * kBlock;
  const int64_t acc_stride = plan.max_accumulators;
  int64_t units = (step.n + kBlock - 1) / kBlock;
  if (step.tiled) {
    for (const Atom& a : step.tiled->inputs) s.in.push_back(a.is_literal() ? a.literal : s.values[a.var]);
    units = (step.tile_view.m + step.tile_rows - 1) / step.tile_rows *
            ((step.tile_view.n + step.tile_cols - 1) / step.tile_cols);
  }
  int threads =
      std::min<int>(runtime::max_threads(), static_cast<int>(w.scratch_size / std::max<int64_t>(per_thread, 1)));
  if (step.n < kParallelElements) threads = 1;
  if (step.tiled)
    threads = std::min<int>(threads, static_cast<int>(w.tile_bases.size() / std::max<size_t>(w.bases.size(), 1)));
  if (acc_stride > 0) threads = std::min<int>(threads, static_cast<int>(w.accumulators.size() / acc_stride));
  threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, units)));
  // Units [u0, u1) on `worker`, adding sums into accumulator set `part`.
  auto work = [&](int64_t u0, int64_t u1, int part, int worker) {
    double* scratch = w.scratch + worker * per_thread;
    double* acc = w.accumulators.data() + part * acc_stride;
    if (!step.tiled) {
      const int64_t e0 = u0 * kBlock, e1 = std::min(u1 * kBlock, step.n);
      if (!lowering.program.empty()) run_program_range(step, lowering, w.bases.data(), scratch, acc, e0, e1);
      else run_fused_range(step, lowering, w.bases.data(), scratch, acc, e0, e1);
      return;
    }
    char** bases = w.tile_bases.data() + static_cast<size_t>(worker) * w.bases.size();
    std::copy(w.bases.begin(), w.bases.end(), bases);
    run_tiles(step, lowering, s.in, bases, w.tiles + worker * w.tile_stride, scratch, acc, u0, u1);
  };
  if (step.accumulators == 0) {
    const int64_t grain = threads > 1 ? std::max<int64_t>(1, units / (int64_t{threads} * kRangesPerThread)) : units;
    parallel_chunks(units, threads, grain, [&](int64_t u0, int64_t u1, int worker) { work(u0, u1, 0, worker); });
    s.in.clear();
    return;
  }
  const Split parts{units, threads};
  parallel_for(threads, threads, [&](int64_t part, int worker) {
    std::fill(w.accumulators.data() + part * acc_stride, w.accumulators.data() + part * acc_stride + step.accumulators,
              kSumStart);
    work(parts.begin(part), parts.end(part), static_cast<int>(part), worker);
  });
  // With as many sums as rows, combining them on one thread costs more than the second one saves.
  parallel_for(threads, threads, [&](int64_t part, int) {
    write_row_sums(step, w.bases.data(), w.accumulators.data(), acc_stride, threads, static_cast<int>(part), threads);
  });
  s.in.clear();
}

/// Runs kernel step `step` on the values of `s`, through the argument lists `in` and `out`
/// (empty on entry and on return; reserved, so that no call allocates).
void run_kernel_step(const Step& step, const RunState& s, std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Equation& e = *step.eqn;
  for (const Atom& a : e.inputs) in.push_back(a.is_literal() ? a.literal : s.values[a.var]);
  for (int32_t v : e.outputs) out.push_back(s.values[v]);
  struct Clear {
    std::vector<Tensor>& in;
    std::vector<Tensor>& out;
    ~Clear() { in.clear(), out.clear(); }
  } clear{in, out};
  // Half-precision equations reach here only with the widen_half pass off: they compute in f32 one by one.
  half_kernels::run_kernel(*e.primitive, step.fn, Backend::cpu, in, *e.params, out);
}

/// Runs a side-by-side step's rounds. A round of several parts runs them over the thread pool,
/// each kernel on one thread alone (cpu::kernel_threads() is 1 there), with that worker's argument
/// lists; the first exception a part throws is rethrown once the round's running parts finished.
void run_side_by_side(const Step& step, RunState& s, CpuWorkspace& w) {
  size_t first = 0;
  for (int32_t round : step.rounds) {
    if (round == 1) {
      run_kernel_step(step.parts[first], s, s.in, s.out);
      ++first;
      continue;
    }
    parallel_for(round, round, [&](int64_t p, int worker) {
      run_kernel_step(step.parts[first + static_cast<size_t>(p)], s, w.side_in[worker], w.side_out[worker]);
    });
    first += static_cast<size_t>(round);
  }
}

/// Planning's view of the CPU lowering table (backends/cpu/lowering.hpp).
class CpuLoweringView final : public runtime::Lowering {
 public:
  bool fuses(const Primitive& p) const override {
    const cpu::Lowering* l = find_lowering(p);
    return l && l->block;
  }
  bool fuses_rows(const Primitive& p) const override {
    const cpu::Lowering* l = find_lowering(p);
    return l && l->row_block;
  }
  bool fuses_broadcasts_and_sums() const override { return true; }
  bool fuses_half_conversions() const override { return true; }
  bool runs_side_by_side() const override { return true; }
  double threaded_work() const override { return kLargeWork; }
  runtime::TileView tile_view(const Primitive& p, const std::vector<AbstractValue>& in,
                              const Params& params) const override {
    const cpu::Lowering* l = find_lowering(p);
    if (!l || !l->tile_plan || !l->tile) return {};
    const TilePlan tp = l->tile_plan(in, params);
    return runtime::TileView{tp.m, tp.n, tp.k};
  }
};

/// The CPU runner: lowering attaches a FusedLowering to every fused step; run walks the steps.
class CpuRunner final : public runtime::PlanRunner {
 public:
  const char* name() const override { return "cpu"; }

  const runtime::Lowering& lowering() const override { return view_; }

  void lower(Plan& plan) const override {
    const bool programs = runtime::enabled(runtime::Switch::register_programs);
    for (Step& step : plan.steps) {
      if (step.type != Step::fused) continue;
      auto lowering = std::make_shared<FusedLowering>();
      for (const FusedMember& m : step.members) {
        FusedLowering::Member k;
        // Broadcast and reduce members run the runner's own code; every other member is an
        // equation planning fused because its primitive has an entry with a block kernel.
        if (!m.broadcast && !m.reduce) {
          const cpu::Lowering& entry = *find_lowering(*m.eqn->primitive);
          k.block = entry.block;
          k.row_block = entry.row_block;
          k.tile_op = entry.tile_op;
        }
        lowering->members.push_back(k);
      }
      if (step.tiled) {
        const Equation& e = *step.tiled;
        std::vector<AbstractValue> in;
        for (const Atom& a : e.inputs) in.push_back(plan.jaxpr->aval_of(a));
        const cpu::Lowering& entry = *find_lowering(*e.primitive);
        lowering->tile = entry.tile;
        lowering->tile_plan = entry.tile_plan(in, *e.params);
      }
      if (programs) compile_tile_program(step, *lowering);
      step.lowering = std::move(lowering);
    }
  }

  std::unique_ptr<runtime::Workspace> make_workspace(const Plan& plan) const override {
    return make_cpu_workspace(plan);
  }

  void run(const Plan& plan, RunState& s) const override {
    CpuWorkspace& w = static_cast<CpuWorkspace&>(*s.workspace);
    for (const Step& step : plan.steps) {
      switch (step.type) {
        case Step::kernel: run_kernel_step(step, s, s.in, s.out); break;
        case Step::side_by_side: run_side_by_side(step, s, w); break;
        case Step::fused: {
          for (size_t k = 0; k < step.externals.size(); ++k)
            if (static_cast<int32_t>(k) != step.tiled_external)
              w.bases[k] = static_cast<char*>(s.values[step.externals[k]].array("jit").data());
          run_fused_step(step, plan, s, w);
          break;
        }
        case Step::dynamic_view: runtime::bind_dynamic_view(plan, step, s); break;
        case Step::nothing: break;
      }
    }
  }

  std::string describe(const Step& step) const override {
    const auto* lowering = dynamic_cast<const FusedLowering*>(step.lowering.get());
    if (!lowering || lowering->program.empty() || step.tiled) return {};
    std::ostringstream os;
    os << ", register program of " << lowering->program.size() << " instructions\n ";
    for (const TileInstr& in : lowering->program) os << " " << cpu::describe(in) << ";";
    return os.str();
  }

 private:
  CpuLoweringView view_;
};

}  // namespace plan_runner_detail

const runtime::PlanRunner& plan_runner() {
  static const plan_runner_detail::CpuRunner runner;
  return runner;
}

}  // namespace fluxion::cpu
