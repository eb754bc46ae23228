// make_plan: the planning stages in order over one Plan and the step uses (defs, reads, in-place
// writes) that buffer liveness reads; describe_plan: the text tests and FLUXION_DUMP_PASSES show.
#include "runtime/planner.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "fluxion/cuda.hpp"
#include "runtime/buffers.hpp"
#include "runtime/fused_step.hpp"
#include "runtime/side_by_side.hpp"
#include "runtime/switches.hpp"
#include "runtime/tiles.hpp"

namespace fluxion::runtime {

Plan make_plan(const Jaxpr& j, Device device, const PlanRunner& runner) {
  Plan plan;
  plan.jaxpr = &j;
  plan.device = device;
  plan.backend = device.is_cuda() ? Backend::cuda : Backend::cpu;
  const Lowering& lowering = runner.lowering();
  static const bool dumping = std::getenv("FLUXION_DUMP_PASSES") != nullptr;
  auto dump = [&](const char* stage) {
    if (dumping) std::cerr << "-- plan after " << stage << " --\n" << describe_plan(plan, runner);
  };
  const size_t nv = j.avals.size();
  plan.kind.assign(nv, Kind::intermediate);
  plan.view_source.assign(nv, -1);
  plan.fixed.assign(nv, Tensor());
  for (int32_t v : j.invars) plan.kind[v] = Kind::arg;
  for (size_t i = 0; i < j.constvars.size(); ++i) {
    plan.kind[j.constvars[i]] = Kind::constant;
    // On a GPU, constants are copied to the device once, when the plan is made.
    plan.fixed[j.constvars[i]] = device_put(j.consts[i].concrete("jit"), device);
  }
  // Values returned to the caller must not live in pooled buffers: mark them (and, backwards
  // through views, what they view) fresh.
  std::vector<bool> fresh(nv, false);
  for (const Atom& a : j.outputs)
    if (!a.is_literal()) fresh[a.var] = true;
  for (auto it = j.equations.rbegin(); it != j.equations.rend(); ++it)
    if (it->primitive->traits.view && fresh[it->outputs[0]] && !it->inputs[0].is_literal())
      fresh[it->inputs[0].var] = true;

  // Fusion off: every equation its own kernel step.
  const bool fuse = enabled(Switch::fusion);
  std::vector<std::vector<int32_t>> groups;
  if (fuse) {
    groups = fuse_elementwise(j, lowering);
  } else {
    for (int32_t eq = 0; eq < static_cast<int32_t>(j.equations.size()); ++eq) groups.push_back({eq});
  }
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

  StepUses uses;
  // The step that defines each variable, so a fused step's reads skip its own outputs in O(1).
  std::vector<int32_t> defined_by(nv, -1);
  GroupVars group_vars(nv);
  for (const auto& group : groups) {
    const auto step_index = static_cast<int32_t>(plan.steps.size());
    std::vector<int32_t> d, r;
    if (group.size() == 1 && !(fuse && parallel_single(j, j.equations[group[0]], lowering))) {
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
      uses.in_place.push_back(step.type == Step::kernel && e.primitive->traits.elementwise);
      plan.steps.push_back(std::move(step));
    } else {
      for (int32_t eq : group) {
        int32_t v = j.equations[eq].outputs[0];
        if (fresh[v]) plan.kind[v] = Kind::output;
      }
      Step step = make_fused_step(j, group, uses_outside, lowering, group_vars);
      for (const FusedMember& m : step.members)
        if (m.output.source == FusedOperand::external) {
          d.push_back(step.externals[m.output.index]);
          defined_by[d.back()] = step_index;
        }
      for (int32_t v : step.externals)
        if (defined_by[v] != step_index) r.push_back(v);
      plan.max_scratch = std::max(plan.max_scratch, step.scratch_slots);
      plan.max_accumulators = std::max(plan.max_accumulators, step.accumulators);
      plan.max_externals = std::max<int32_t>(plan.max_externals, static_cast<int32_t>(step.externals.size()));
      uses.in_place.push_back(false);  // members write before later members read the same positions
      plan.steps.push_back(std::move(step));
    }
    uses.defs.push_back(std::move(d));
    uses.reads.push_back(std::move(r));
  }
  dump("fusion");
  plan_tiles(j, plan, uses, lowering);
  dump("tiles");
  plan_side_by_side(j, plan, uses, lowering);
  dump("side by side");
  // Jaxpr outputs are read after the last step.
  std::vector<int32_t> final_reads;
  for (const Atom& a : j.outputs)
    if (!a.is_literal()) final_reads.push_back(a.var);
  uses.defs.emplace_back();
  uses.reads.push_back(final_reads);
  uses.in_place.push_back(false);
  for (size_t v = 0; v < nv; ++v)
    if (plan.kind[v] == Kind::output) plan.output_vars.push_back(static_cast<int32_t>(v));
  assign_buffers(j, plan, uses);
  runner.lower(plan);
  dump("buffers");
  return plan;
}

std::string describe_plan(const Plan& plan, const PlanRunner& runner) {
  std::ostringstream os;
  int fused = 0, kernels = 0;
  for (const Step& step : plan.steps) {
    if (step.type == Step::fused) {
      ++fused;
      const auto reductions =
          std::count_if(step.members.begin(), step.members.end(), [](const FusedMember& m) { return m.reduce; });
      os << "fused[" << step.members.size() + step.row_broadcasts << " ops, n=" << step.n
         << ", scratch=" << step.scratch_slots;
      if (reductions > 0) os << ", " << reductions << " row sums";
      if (step.row_broadcasts > 0) os << ", " << step.row_broadcasts << " broadcasts read by rows";
      if (step.tiled)
        os << ", " << step.tiled->primitive->name << " " << step.tile_view.m << "x" << step.tile_view.n << " in "
           << step.tile_rows << "x" << step.tile_cols << " tiles";
      // The lowering's summary goes inside the brackets, its detail on the next line.
      const std::string lowered = runner.describe(step);
      const size_t cut = lowered.find('\n');
      os << lowered.substr(0, cut) << "]\n";
      if (cut != std::string::npos) os << lowered.substr(cut + 1) << "\n";
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
     << intermediate_bytes(plan) << " bytes)\n";
  return os.str();
}

int64_t intermediate_bytes(const Plan& plan) {
  int64_t total = 0;
  for (int64_t b : plan.buffer_bytes) total += b;
  return total;
}

}  // namespace fluxion::runtime
