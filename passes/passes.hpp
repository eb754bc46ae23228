/// Jaxpr -> Jaxpr optimisation passes run by fx::jit: inlining, simplification, CSE and DCE.
#pragma once
#include <cstdint>

#include "fluxion/jaxpr.hpp"

namespace fluxion::passes {

// Every pass takes its Jaxpr by value and rewrites it in place where it can (dce, cse, simplify,
// widen_half; inline when nothing is inlined): the pipeline moves each result into the next pass,
// so a program is held about once, not once per pass. An lvalue argument is copied, as before.

/// Dead-code elimination: drops equations none of whose outputs are used (every primitive is
/// pure) and constvars no longer referenced; invars and outputs stay; variables are renumbered densely.
Jaxpr dce(Jaxpr jaxpr);

/// Common-subexpression elimination: an equation repeating an earlier one (same primitive, equal
/// params, same inputs; commutative ones in either order) reuses its outputs; equal constants merge.
Jaxpr cse(Jaxpr jaxpr);

/// Algebraic simplification (x*1, neg(neg x), transpose/reshape chains, identity-matrix products...)
/// and constant folding of small results, to a fixed point; every rewrite keeps the replaced aval.
Jaxpr simplify(Jaxpr jaxpr);

/// Rewrites every equation with f16/bf16 operands or results (convert_element_type excepted) as
/// converts to f32, the same equation in f32, and converts back: the math eval_primitive does eagerly,
/// made visible to fusion, which then keeps the f32 values inside fused groups. Sub-Jaxprs (cond, while,
/// scan) are widened when their own plans are compiled.
Jaxpr widen_half(Jaxpr jaxpr);

/// Replaces every transparent call (jit_call) by the equations of its sub-Jaxpr, recursively.
Jaxpr inline_calls(Jaxpr jaxpr);
/// Also inlines calls carrying rules of their own (custom_jvp_call, custom_vjp_call, checkpoint):
/// only for Jaxprs that are executed, never transformed again.
Jaxpr inline_all_calls(Jaxpr jaxpr);
/// Replaces the calls (primitives with a callee) that `chosen` picks by their sub-Jaxprs' equations,
/// recursively; returns `jaxpr` unchanged when it picks none.
Jaxpr inline_calls_where(Jaxpr jaxpr, bool (*chosen)(const Equation&));

/// The pipeline of fx::jit: inline_calls, dce, then simplify, cse, dce until the equation count
/// settles (at most 4 rounds), typechecking after each pass; FLUXION_DUMP_PASSES=1 prints each stage.
Jaxpr optimize(Jaxpr jaxpr);
/// optimize() for a plan about to be executed: every call is inlined first (inline_all_calls).
Jaxpr optimize_for_execution(Jaxpr jaxpr);
/// For a Jaxpr optimize() already ran on, about to be executed: when calls with rules of their own
/// remain, optimize_for_execution (they are inlined, then cleaned up); otherwise `optimized` as it
/// is, so that the pipeline runs once per jit signature.
Jaxpr finish_for_execution(const Jaxpr& optimized);
/// True when equations with a callee (calls finish_for_execution inlines) remain in `jaxpr`.
bool has_calls(const Jaxpr& jaxpr);
/// How many times optimize / optimize_for_execution ran in this process (a test hook).
uint64_t pipeline_runs();

}  // namespace fluxion::passes
