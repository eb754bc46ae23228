/// Optimization switches: every optimization of the passes, the planner and the CPU kernels can
/// be turned off by name for an A/B run, from the environment (FLUXION_DISABLE=tiles,gram) or from
/// code (set_disabled). Turning one off never changes a result beyond rounding (the same
/// operations in another order or grouping); tests run with each off.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fluxion::runtime {

/// The switchable optimizations. Add one here and in switches.cpp's table (name + what it does).
enum class Switch : uint8_t {
  simplify,           // passes: the simplify pass as a whole (every rule below)
  algebra,            // simplify: units, negation, movement chains, select
  seeds,              // simplify: products with identity and diagonal seed matrices
  products,           // simplify: products of broadcasts on the unbroadcast values, transposes moved
  siblings,           // simplify: products of one matrix with several vectors stacked into one
  gram,               // simplify: xᵀ diag(s) x as gram(x, s); transposes of symmetric values dropped
  cse,                // passes: common-subexpression elimination
  widen_half,         // passes: f16/bf16 equations as converts around f32 ones, fused with their neighbours
  fusion,             // plan: elementwise chains and reductions fused into one pass over blocks
  tiles,              // plan: large products computed tile by tile inside the group reading them
  side_by_side,       // plan: independent kernels run side by side, one thread each
  buffer_reuse,       // plan: intermediates share buffers by liveness
  register_programs,  // cpu: fused f32/f64 chains kept in vector registers
  blas,               // cpu: OpenBLAS / oneDNN for large products (Eigen's product otherwise)
  small_linalg,       // cpu: systems of n <= 8 solved by fixed-size kernels (batches of them under vmap)
  loops,              // scan/while/fori: the body's plan run step after step on one held state (LoopRunner)
  count
};

/// False when `s` is disabled (FLUXION_DISABLE, read once, or set_disabled). A cheap load.
bool enabled(Switch s);
/// The name of `s` as FLUXION_DISABLE spells it.
const char* switch_name(Switch s);
/// One line per switch: "name  what it does" (the README's table is generated from it).
std::string describe_switches();
/// Disables exactly the comma-separated `names` ("" enables everything). Throws fluxion::Error
/// naming an unknown switch and listing the known ones. Affects plans compiled afterwards only:
/// clear the jit cache (fx::clear_cache) to recompile.
void set_disabled(const std::string& names);
/// The comma-separated names now disabled.
std::string disabled();

}  // namespace fluxion::runtime
