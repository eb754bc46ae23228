// The random program fuzzer (issue 28, in the manner of JAX's and ∇Fuzz's): random compositions
// of the public ops and transforms (tests/fuzz/), each checked for
//   eager = jit (and the cached plan's second call = its first), vmap = a loop over examples
//   (vmap(f), vmap(jit(f)), jit(vmap(f)), mapped and unmapped inputs, in/out axes 0 and -1),
//   jvp = fourth-order central finite differences (f64), <w, J v> = <J^T w, v> (vjp against
//   jvp) and linearize = jvp, jacfwd = jacrev, grad(jit(f)) = jit(grad(f)) = grad(f); the Jaxprs
//   of f, vmap(f) and grad(f) typecheck.
// A failure prints the seed, the program shrunk while it still fails (readable form and Jaxpr),
// the inputs and both results.
//
// Environment: FLUXION_FUZZ_PROGRAMS (default 2,000; 200 in sanitizer / unoptimised builds),
// FLUXION_FUZZ_SEED (first program's seed, default 28), FLUXION_FUZZ_REPORTS (failures reported
// in full, default 3).
// bench/fuzz_programs.sh runs the long mode (100,000 programs).
//
// What the generator leaves out, and why:
// - Forward mode only by nature: while_loop without max_steps and fori_loop with Tensor bounds
//   (reverse mode needs fx::max_steps; a documented limitation, not a bug).
// - Not generated: ops that are not differentiable where finite differences would probe them
//   (abs, sign, floor, ceil, round, remainder, comparisons as values, argmax/argmin, max/min
//   reductions of tensors that may hold ties, sort), stop_gradient (finite differences see
//   through it by design), integer and bool values other than constant masks, indices and loop
//   counters, random keys, linalg decompositions other than a well-conditioned solve, and
//   special values (inf, NaN, -0.0, overflow: issue 36's eager-vs-jit bit-equality test covers
//   them; here every op stays on a domain where it is finite and smooth, e.g. log(1 + x^2)).
// - softmax / log_softmax over a size-1 axis (cumsum is generated there instead): constant
//   results (exactly 1 and 0) that only feed exact ties and zeros into what follows.
// - Size-0 dimensions: not generated. max/min/take of an empty axis are errors and mean of one
//   is NaN by definition, so the value checks cannot compare them (issue 36 item 5 tests empty
//   tensors on their own).
// - Finite differences are skipped for programs with f32 values (f32 cannot resolve them). Their
//   step shrinks (2e-3 down to 1e-5) until two estimates in a row agree, skipping stencils on
//   which a data-dependent cond/switch_ predicate changes, so that a near tie of maximum/minimum
//   or a branch boundary next to x is not mistaken for a wrong derivative; when no two agree
//   (a kink closer than 2e-5), the check is skipped.
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "fuzz/checks.hpp"

namespace fx = fluxion;
namespace fz = fluxion::fuzz;

namespace {

#if defined(__SANITIZE_ADDRESS__) || !defined(__OPTIMIZE__)
constexpr int64_t kDefaultPrograms = 200;  // ASan/UBSan at -O0 is ~20x slower
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int64_t kDefaultPrograms = 200;
#else
constexpr int64_t kDefaultPrograms = 2000;
#endif
#else
constexpr int64_t kDefaultPrograms = 2000;
#endif

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

// Restores the planted bug's switch at the end of a scope.
struct PlantedBug {
  PlantedBug() { fz::set_planted_bug(true); }
  ~PlantedBug() { fz::set_planted_bug(false); }
};

}  // namespace

TEST_CASE(
    "fuzz: random programs agree eager/jit, vmap/loop, jvp/finite differences, jvp/vjp, jacfwd/jacrev, grad/jit") {
  int64_t programs = env_int("FLUXION_FUZZ_PROGRAMS", kDefaultPrograms);
  uint64_t seed = static_cast<uint64_t>(env_int("FLUXION_FUZZ_SEED", 28));
  fz::GenOptions options;
  fz::Stats stats;
  fz::fuzz(seed, programs, options, stats, static_cast<size_t>(env_int("FLUXION_FUZZ_REPORTS", 3)));
  std::cout << "fuzz: seeds " << seed << ".." << seed + static_cast<uint64_t>(programs) - 1 << '\n'
            << fz::summary(stats);
  for (const std::string& report : stats.failures) FAIL_CHECK(report);
  int64_t failed = stats.generator_failures;
  for (int64_t f : stats.failed) failed += f;
  CHECK(failed == 0);
  // Every check ran on most programs, and (on a full-size run) every op was generated.
  for (size_t k = 0; k < stats.passed.size(); ++k) {
    INFO("check: " << fz::check_name(static_cast<fz::Check>(k)));
    CHECK(stats.passed[k] + stats.failed[k] >= programs / 3);
  }
  if (programs >= 1000)
    for (size_t k = 0; k < stats.op_counts.size(); ++k) {
      INFO("op: " << fz::op_name(static_cast<fz::Op>(k)));
      CHECK(stats.op_counts[k] > 0);
    }
}

TEST_CASE("fuzz: the same seed gives the same program and inputs") {
  for (uint64_t seed = 100; seed < 110; ++seed) {
    fz::Program a = fz::generate(seed), b = fz::generate(seed);
    CHECK(fz::to_string(a) == fz::to_string(b));
    std::vector<fx::Tensor> xa = fz::make_inputs(a, seed), xb = fz::make_inputs(b, seed);
    for (size_t i = 0; i < xa.size(); ++i) CHECK(xa[i].to_vector<double>() == xb[i].to_vector<double>());
  }
}

TEST_CASE("fuzz: a wrong custom_jvp rule is caught by finite differences and shrunk to a few nodes") {
  PlantedBug bug;
  int found = 0;
  for (uint64_t seed = 1; seed < 400 && found < 2; ++seed) {
    fz::Program p = fz::generate(seed);
    std::vector<int64_t> counts;
    fz::count_ops(p, counts);
    if (counts[static_cast<size_t>(fz::Op::CustomJvp)] == 0 || p.has_f32) continue;
    std::vector<fx::Tensor> xs = fz::make_inputs(p, seed);
    fz::Outcome o = fz::run_check(fz::Check::JvpFiniteDifferences, p, xs, seed);
    if (o.kind != fz::Outcome::Failed) continue;  // the rule's output may not reach the result
    ++found;
    fz::Program small = fz::shrink(p, [&](const fz::Program& q) {
      return fz::run_check(fz::Check::JvpFiniteDifferences, q, xs, seed).kind == fz::Outcome::Failed;
    });
    std::vector<int64_t> small_counts;
    fz::count_ops(small, small_counts);
    INFO(fz::failure_report(seed, fz::Check::JvpFiniteDifferences, p, small, xs, o));
    CHECK(small_counts[static_cast<size_t>(fz::Op::CustomJvp)] >= 1);
    CHECK(small.nodes.size() <= 3);
    std::string report = fz::failure_report(seed, fz::Check::JvpFiniteDifferences, p, small, xs, o);
    CHECK(report.find("custom_jvp") != std::string::npos);
    CHECK(report.find("FLUXION_FUZZ_SEED=" + std::to_string(seed)) != std::string::npos);
  }
  CHECK(found == 2);
}
