/// The properties every random program must have: eager = jit, vmap = a loop of examples, jvp =
/// finite differences, <w, J v> = <J^T w, v> (vjp against jvp; linearize = jvp too), jacfwd =
/// jacrev, grad(jit) = jit(grad) = grad; the Jaxprs of f, vmap(f) and grad(f) typecheck.
/// Plus the fuzzing loop: run programs, shrink a failing one, report it.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fuzz/program.hpp"

namespace fluxion::fuzz {

enum class Check : uint8_t { EagerJit, VmapLoop, JvpFiniteDifferences, VjpJvp, JacfwdJacrev, GradJit, kCount };
const char* check_name(Check c);

/// A check's verdict: passed, skipped (not applicable, or finite differences crossed a branch
/// boundary), or failed with a description holding both results.
struct Outcome {
  enum Kind { Passed, Skipped, Failed } kind = Passed;
  std::string detail;
  /// The largest error seen relative to the check's tolerance (1 = at the tolerance).
  double error_ratio = 0;
  /// eager = jit only: the largest distance in units in the last place between the two results.
  double ulps = 0;
};

/// The program's inputs for `seed`: uniform in [-2, 2).
std::vector<Tensor> make_inputs(const Program& p, uint64_t seed);

/// Runs check `c` on `p` at `inputs`; exceptions become failures. `seed` draws the check's own
/// random values (tangents, batches...), so a check is reproducible from (program, inputs, seed).
Outcome run_check(Check c, const Program& p, const std::vector<Tensor>& inputs, uint64_t seed);

/// Totals of a fuzzing run.
struct Stats {
  int64_t programs = 0;
  std::array<int64_t, static_cast<size_t>(Check::kCount)> passed{}, skipped{}, failed{};
  std::array<double, static_cast<size_t>(Check::kCount)> worst_ratio{};
  std::array<uint64_t, static_cast<size_t>(Check::kCount)> worst_seed{};
  double worst_ulps = 0;
  std::vector<int64_t> op_counts;  // by Op
  int64_t forward_only = 0, with_f32 = 0;
  int64_t generator_failures = 0;     // an op refused a node the generator built (see fuzz.cpp)
  std::vector<std::string> failures;  // full reports
};

/// Runs programs seed_base, seed_base + 1, ... (count of them) through every check; each failure
/// is shrunk and reported in stats.failures (at most `max_reports`, the rest counted).
void fuzz(uint64_t seed_base, int64_t count, const GenOptions& options, Stats& stats, size_t max_reports = 3);

/// `p` made as small as possible while `still_fails(candidate)` holds: drops nodes, replaces a
/// node by one of its arguments of the same type, picks earlier outputs, recursively in bodies.
Program shrink(const Program& p, const std::function<bool(const Program&)>& still_fails);

/// A failure's report: seed, check, the shrunk program, its Jaxpr, inputs and both results.
std::string failure_report(uint64_t seed, Check c, const Program& original, const Program& shrunk,
                           const std::vector<Tensor>& inputs, const Outcome& outcome);

/// A summary of `stats`: counts per check and per op, worst errors.
std::string summary(const Stats& stats);

}  // namespace fluxion::fuzz
