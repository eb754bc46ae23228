// optimize: the pass pipeline of fx::jit (inline, dce, widen_half, then simplify, cse, dce until the
// equation count settles); FLUXION_DISABLE=widen_half, simplify or cse leaves that pass out.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iostream>

#include "passes/passes.hpp"
#include "runtime/switches.hpp"

namespace fluxion::passes {
namespace optimize_detail {

/// Rounds of simplify + cse + dce at most.
constexpr int kMaxRounds = 4;

/// FLUXION_DUMP_PASSES set (to anything) prints the Jaxpr after each pass; read once.
bool dump_passes() {
  static const bool on = std::getenv("FLUXION_DUMP_PASSES") != nullptr;
  return on;
}

/// Runs one pass, typechecks its result (cheap: one shape rule per equation) and dumps it.
Jaxpr run_pass(const char* name, Jaxpr (*pass)(Jaxpr), Jaxpr in) {
  Jaxpr out = pass(std::move(in));
  typecheck(out);
  if (dump_passes()) std::cerr << "-- after " << name << " --\n" << out << "\n";
  return out;
}

/// Pipelines run by this process (pipeline_runs(), a test hook).
std::atomic<uint64_t> runs{0};

/// Inlining by `inline_pass`, then rounds of simplify + cse + dce.
Jaxpr pipeline(const char* inline_name, Jaxpr (*inline_pass)(Jaxpr), Jaxpr jaxpr) {
  runs.fetch_add(1, std::memory_order_relaxed);
  Jaxpr current = run_pass(inline_name, inline_pass, std::move(jaxpr));
  // Dead equations first (a gradient's unused primal products): rules that pair equations
  // (simplify_siblings.cpp) must not pair a live one with a dead one.
  current = run_pass("dce", &dce, std::move(current));
  // f16/bf16 equations as f32 ones between converts, before simplify and fusion see them. Off, the plan
  // runners widen such equations one by one (transforms/half_kernels.hpp): same values, unfused.
  if (runtime::enabled(runtime::Switch::widen_half)) current = run_pass("widen_half", &widen_half, std::move(current));
  // Switched-off passes are skipped (runtime/switches.hpp), read once per compile.
  const bool simplifying = runtime::enabled(runtime::Switch::simplify);
  const bool merging = runtime::enabled(runtime::Switch::cse);
  for (int round = 0; round < optimize_detail::kMaxRounds; ++round) {
    const size_t before = current.equations.size();
    if (simplifying) current = run_pass("simplify", &simplify, std::move(current));
    if (merging) current = run_pass("cse", &cse, std::move(current));
    current = run_pass("dce", &dce, std::move(current));
    if (current.equations.size() == before) break;
  }
  return current;
}

}  // namespace optimize_detail

Jaxpr optimize(Jaxpr jaxpr) { return optimize_detail::pipeline("inline_calls", &inline_calls, std::move(jaxpr)); }

Jaxpr optimize_for_execution(Jaxpr jaxpr) {
  return optimize_detail::pipeline("inline_all_calls", &inline_all_calls, std::move(jaxpr));
}

bool has_calls(const Jaxpr& jaxpr) {
  return std::any_of(jaxpr.equations.begin(), jaxpr.equations.end(),
                     [](const Equation& e) { return e.primitive->callee != nullptr; });
}

Jaxpr finish_for_execution(const Jaxpr& optimized) {
  // optimize() left only the calls with rules of their own (inline_calls spliced the rest).
  return has_calls(optimized) ? optimize_for_execution(optimized) : optimized;
}

uint64_t pipeline_runs() { return optimize_detail::runs.load(std::memory_order_relaxed); }

}  // namespace fluxion::passes
