// plan_side_by_side: one walk over the steps collecting runs of independent kernels (and the views
// between them), ordered by estimated cost and cut into rounds by side_rounds.
#include "runtime/side_by_side.hpp"

#include <algorithm>

#include "runtime/backend.hpp"
#include "runtime/switches.hpp"

namespace fluxion::runtime {

namespace side_by_side_detail {

/// Multiply-adds a moved element counts for in kernel_work: about as long as 8 multiply-adds of
/// an AVX-512 GEMM on one core here (~12 elements/ns of memory bandwidth, ~100 multiply-adds/ns).
constexpr double kElementWork = 8;
/// Kernels cheaper than this run alone: the team's start and join (~1-2 us) would eat the gain.
constexpr double kSideMinWork = 1 << 20;
/// Parallel efficiency assumed for a kernel that threads itself (Lowering::threaded_work and up): f32
/// GEMMs of an MLP's size run at 1.7-1.9x their one-thread speed on 2 threads (measured:
/// bench/RESULTS.md).
constexpr double kThreadedSpeedup = 0.9;

}  // namespace side_by_side_detail

double kernel_work(const Jaxpr& j, const Equation& e, const Lowering& lowering) {
  using side_by_side_detail::kElementWork;
  std::vector<AbstractValue> in;
  for (const Atom& a : e.inputs) in.push_back(j.aval_of(a));
  if (const TileView tp = lowering.tile_view(*e.primitive, in, *e.params); tp.m > 0)
    return static_cast<double>(tp.m) * static_cast<double>(tp.n) * static_cast<double>(std::max<int64_t>(tp.k, 1));
  double elements = 0;
  for (const AbstractValue& a : in) elements += static_cast<double>(a.shape.num_elements());
  for (int32_t v : e.outputs) elements += static_cast<double>(j.avals[v].shape.num_elements());
  return elements * kElementWork;
}

// The next `threads` parts go side by side, one thread each, when the largest of them alone would
// take less than the group run one after the other, each kernel with the threads it takes alone
// (every thread from the backend's threaded_work); otherwise the largest runs alone.
std::vector<int32_t> side_rounds(const std::vector<double>& work, int threads, double threaded_work) {
  using side_by_side_detail::kThreadedSpeedup;
  std::vector<int32_t> rounds;
  size_t i = 0;
  while (i < work.size()) {
    const size_t group = std::min<size_t>(static_cast<size_t>(threads), work.size() - i);
    double one_by_one = 0;
    for (size_t p = i; p < i + group; ++p)
      one_by_one += work[p] >= threaded_work ? work[p] / (threads * kThreadedSpeedup) : work[p];
    const bool side = group > 1 && work[i] < one_by_one;
    rounds.push_back(side ? static_cast<int32_t>(group) : 1);
    i += side ? group : 1;
  }
  return rounds;
}

// Runs of consecutive kernel steps that read nothing another step of the run writes. On 2
// threads a product's own split over the team runs at 1.4-1.7x its one-thread speed, a thin one
// (256 x 512 x 10) at 0.7x, where side by side keeps every thread on its own product (measured:
// bench/RESULTS.md). For liveness the step reads all its parts' inputs and then writes all their
// outputs, so no part's output shares storage with another part's input.
void plan_side_by_side(const Jaxpr& j, Plan& plan, StepUses& uses, const Lowering& lowering) {
  using namespace side_by_side_detail;
  const int threads = max_threads();
  if (!lowering.runs_side_by_side() || threads <= 1 || !enabled(Switch::side_by_side)) return;
  std::vector<std::vector<int32_t>>& defs = uses.defs;
  std::vector<std::vector<int32_t>>& reads = uses.reads;
  std::vector<bool>& in_place = uses.in_place;
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
    // Collectives run in program order, alone: every rank must call them in the same order.
    return plan.steps[s].type == Step::kernel && !plan.steps[s].eqn->primitive->traits.collective &&
           kernel_work(j, *plan.steps[s].eqn, lowering) >= kSideMinWork;
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
    for (size_t p : kernels) by_work.emplace_back(kernel_work(j, *plan.steps[p].eqn, lowering), p);
    std::stable_sort(by_work.begin(), by_work.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<double> work;
    for (const auto& w : by_work) work.push_back(w.first);
    std::vector<int32_t> rounds = side_rounds(work, threads, lowering.threaded_work());
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

}  // namespace fluxion::runtime
