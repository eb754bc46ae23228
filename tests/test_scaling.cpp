// Long programs (issue 37): tracing, grad and jit of chains of 2*10^5 equations give the right
// numbers (bench/bench_scaling measures their time and memory), and running out of memory while
// tracing or compiling is an OutOfMemoryError, not std::bad_alloc.
#include <doctest/doctest.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "passes/passes.hpp"
#include "runtime/executable.hpp"
#include "runtime/fused_step.hpp"
#include "samples.hpp"
#include "test_util.hpp"

namespace fx = fluxion;

extern char** environ;

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

/// 2*10^5 equations (a tenth under the sanitizers, which run every test several times slower).
constexpr long kChain = kSanitized ? 20000 : 200000;

fx::Tensor sin_chain(const fx::Tensor& x0, long n) {
  fx::Tensor x = x0;
  for (long i = 0; i < n; ++i) x = fx::sin(x);
  return fx::sum(x);
}

/// The chain's value and derivative at x0, by plain doubles.
void chain_by_hand(double x0, long n, double& value, double& derivative) {
  value = x0, derivative = 1;
  for (long i = 0; i < n; ++i) derivative *= std::cos(value), value = std::sin(value);
}

/// Virtual memory of this process in bytes (VmSize), or 0 where unknown.
long long virtual_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmSize:", 0) == 0) return std::atoll(line.c_str() + 7) * 1024;
  return 0;
}

}  // namespace

TEST_CASE("long programs: make_jaxpr, grad, jit and jit(grad) of a 2*10^5-equation chain are exact") {
  const double x0 = 0.7;
  double value = 0, derivative = 0;
  chain_by_hand(x0, kChain, value, derivative);
  const fx::Tensor x = fx::full({3}, x0, fx::f64);
  auto f = [](const fx::Tensor& t) { return sin_chain(t, kChain); };

  const fx::Jaxpr traced = fx::make_jaxpr(f)(x);
  CHECK(traced.equations.size() == static_cast<size_t>(kChain + 1));  // the sines and the sum
  fx::typecheck(traced);

  const fx::Tensor g = fx::grad(f)(x);
  for (double d : g.to_vector<double>()) CHECK(d == doctest::Approx(derivative).epsilon(1e-12));

  CHECK(fx::jit(f)(x).item<double>() == doctest::Approx(3 * value).epsilon(1e-12));

  const fx::Tensor jg = fx::jit(fx::grad(f))(x);
  for (double d : jg.to_vector<double>()) CHECK(d == doctest::Approx(derivative).epsilon(1e-12));
}

TEST_CASE("long programs: a product chain's gradient holds every residual (one per equation) correctly") {
  // x * c_i with a different constant per equation: grad keeps one residual per equation, each
  // looked up by the staging interpreter, and jit's CSE compares every constant.
  const long n = 20000;
  std::vector<fx::Tensor> cs;
  double product = 1;
  for (long i = 0; i < n; ++i) {
    const double c = 1.0 + 1e-5 * static_cast<double>(i % 7);
    product *= c;
    cs.push_back(fx::full({2}, c, fx::f64));
  }
  auto f = [&](const fx::Tensor& x) {
    fx::Tensor y = x;
    for (const fx::Tensor& c : cs) y = y * c;
    return fx::sum(y);
  };
  const fx::Tensor x = fx::full({2}, 0.5, fx::f64);
  const fx::Tensor g = fx::grad(f)(x);
  const fx::Tensor jg = fx::jit(fx::grad(f))(x);
  for (double d : g.to_vector<double>()) CHECK(d == doctest::Approx(product).epsilon(1e-12));
  for (double d : jg.to_vector<double>()) CHECK(d == doctest::Approx(product).epsilon(1e-12));
}

TEST_CASE("long programs: a gradient's fused group spills small values past kMaxScratchSlots, not large ones") {
  // Every cos of the forward chain lives until its backward product: one long fused group.
  for (const int64_t width : {int64_t{3}, fx::runtime::kBlock * 2}) {
    CAPTURE(width);
    const long n = 600;
    auto f = [n](const fx::Tensor& t) { return sin_chain(t, n); };
    const fx::Tensor x = fx::full({width}, 0.7, fx::f64);
    const fx::Jaxpr j = fx::make_jaxpr(fx::grad(f))(x);
    const fx::Executable plan(std::make_shared<const fx::Jaxpr>(fx::passes::optimize(j)), fx::Device::cpu());
    int32_t most = 0;
    for (const fx::runtime::Step& step : plan.plan().steps) most = std::max(most, step.scratch_slots);
    if (width < fx::runtime::kBlock) CHECK(most == fx::runtime::kMaxScratchSlots);
    else CHECK(most > fx::runtime::kMaxScratchSlots);  // a slot is cheaper than the value written out
    std::vector<fx::Tensor> out;
    plan.run({x}, out);
    REQUIRE(out.size() == 1);
    CHECK(fx::testing::compare_tensors(out[0], fx::grad(f)(x)) == "");
  }
}

// Runs in a child process (below) with its address space limited: a program far too large for it
// must fail with OutOfMemoryError, wherever tracing, the passes or the planner run out.
TEST_CASE("long programs (child): out of memory while tracing or compiling is an OutOfMemoryError") {
  const char* limit = std::getenv("FLUXION_TEST_AS_LIMIT");
  if (!limit) return;  // only the child process runs this case
  rlimit r{};
  r.rlim_cur = r.rlim_max = static_cast<rlim_t>(std::atoll(limit));
  REQUIRE(setrlimit(RLIMIT_AS, &r) == 0);
  auto f = [](const fx::Tensor& t) { return sin_chain(t, 20000000); };
  const fx::Tensor x = fx::full({2}, 0.5, fx::f64);
  bool out_of_memory = false;
  try {
    fx::jit(fx::grad(f))(x);
  } catch (const fx::OutOfMemoryError& e) {
    out_of_memory = true;
    CHECK(std::string(e.what()).find("out of memory") != std::string::npos);
  }
  CHECK(out_of_memory);
}

TEST_CASE("long programs: jit(grad) past an address-space limit throws OutOfMemoryError in a child process") {
  if (kSanitized) return;  // the sanitizers reserve terabytes of address space up front
  const long long base = virtual_bytes();
  REQUIRE(base > 0);
  const std::string limit = "FLUXION_TEST_AS_LIMIT=" + std::to_string(base + (256LL << 20));
  std::vector<std::string> env_strings{limit};
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  std::vector<char*> env;
  for (std::string& s : env_strings) env.push_back(s.data());
  env.push_back(nullptr);
  std::string self = "/proc/self/exe", filter = "--test-case=long programs (child)*";
  char* argv[] = {self.data(), filter.data(), nullptr};
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, env.data()) == 0);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // doctest's exit code: the child case passed
}
