// How tracing, grad, jit and jit(grad) scale with the number of equations (issue 37): a chain of
// N equations x = sin(x) on a vector of --width elements (4 by default; a scalar, width 0, makes
// every residual a literal), one stage per process so each peak RSS is that stage's own.
//   ./build/bench/bench_scaling                          table for N = 10^4, 10^5, 10^6, every stage
//   ./build/bench/bench_scaling --n 1000000 --stage grad one run: "stage N cpu_s peak_MB bytes_per_eq"
//   ./build/bench/bench_scaling --ns 10000,100000        the table for other sizes
// Stages: trace (make_jaxpr), grad, jit (first call: trace, passes, plan, run), jit_grad (first
// call of jit(grad)); trace_grad (make_jaxpr of grad: jit_grad's tracing alone) on request. Peak memory is ru_maxrss minus the RSS before the stage; bytes per equation
// divide that by N. Each run also checks the value against the closed form of the chain.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fluxion/fluxion.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fx = fluxion;

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double peak_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;  // kilobytes on Linux
}

double current_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  return 0;
}

/// The chain, and its value and derivative by plain doubles.
fx::Tensor chain(const fx::Tensor& x0, long n) {
  fx::Tensor x = x0;
  for (long i = 0; i < n; ++i) x = fx::sin(x);
  return x;
}

void expected(double x0, long n, double& value, double& derivative) {
  value = x0, derivative = 1;
  for (long i = 0; i < n; ++i) derivative *= std::cos(value), value = std::sin(value);
}

/// Runs one stage and prints its line; returns nonzero when the value is wrong. The functions
/// return the sum of the chain's elements (all start at x0), so the expected values scale by width.
int run_stage(const std::string& stage, long n, long width) {
  const double x0 = 0.7;
  double value = 0, derivative = 0;
  expected(x0, n, value, derivative);
  fx::Tensor x = width == 0 ? fx::scalar(x0) : fx::full({width}, x0, fx::f64);
  value *= std::max(1L, width);
  auto f = [n](const fx::Tensor& t) { return fx::sum(chain(t, n)); };
  const double base_mb = current_mb();
  const double t0 = cpu_seconds();
  double got = 0, want = 0;
  if (stage == "trace") {
    fx::Jaxpr j = fx::make_jaxpr(f)(x);
    got = static_cast<double>(j.equations.size()), want = static_cast<double>(n + 1);  // and the sum
  } else if (stage == "trace_grad") {  // the tracing part of jit_grad alone
    fx::Jaxpr j = fx::make_jaxpr(fx::grad(f))(x);
    got = want = static_cast<double>(j.equations.size());
  } else if (stage == "grad") {
    got = fx::sum(fx::grad(f)(x)).item<double>(), want = derivative * std::max(1L, width);
  } else if (stage == "jit") {
    got = fx::jit(f)(x).item<double>(), want = value;
  } else if (stage == "jit_grad") {
    got = fx::sum(fx::jit(fx::grad(f))(x)).item<double>(), want = derivative * std::max(1L, width);
  } else {
    std::fprintf(stderr, "unknown stage '%s': use trace, trace_grad, grad, jit or jit_grad\n", stage.c_str());
    return 2;
  }
  const double seconds = cpu_seconds() - t0;
  const double mb = peak_mb() - base_mb;
  std::printf("%-8s %8ld %9.2f %9.1f %9.0f\n", stage.c_str(), n, seconds, mb, mb * 1048576.0 / n);
  std::fflush(stdout);
  if (!(std::abs(got - want) <= 1e-9 * std::max(1.0, std::abs(want)))) {
    std::fprintf(stderr, "%s at n=%ld: got %.17g, expected %.17g\n", stage.c_str(), n, got, want);
    return 1;
  }
  return 0;
}

std::vector<long> parse_sizes(const std::string& list) {
  std::vector<long> ns;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) ns.push_back(std::atol(item.c_str()));
  return ns;
}

}  // namespace

int main(int argc, char** argv) {
  long n = 0, width = 4;
  std::string stage, sizes = "10000,100000,1000000", stages = "trace,grad,jit,jit_grad";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--n") n = std::atol(argv[i + 1]);
    else if (flag == "--stage") stage = argv[i + 1];
    else if (flag == "--ns") sizes = argv[i + 1];
    else if (flag == "--stages") stages = argv[i + 1];
    else if (flag == "--width") width = std::atol(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown flag %s (use --n, --stage, --ns, --stages, --width)\n", flag.c_str());
      return 2;
    }
  }
  if (n > 0 && !stage.empty()) return run_stage(stage, n, width);
  // The table: every (stage, N) in a child process of its own.
  std::printf("%-8s %8s %9s %9s %9s\n", "stage", "N", "cpu_s", "peak_MB", "B/eq");
  std::fflush(stdout);
  int failures = 0;
  for (const std::string& s : [&] {
         std::vector<std::string> out;
         std::stringstream in(stages);
         std::string item;
         while (std::getline(in, item, ',')) out.push_back(item);
         return out;
       }()) {
    for (long size : parse_sizes(sizes)) {
      pid_t pid = fork();
      if (pid == 0) {
        std::string ns = std::to_string(size), w = std::to_string(width);
        execl("/proc/self/exe", argv[0], "--n", ns.c_str(), "--stage", s.c_str(), "--width", w.c_str(),
              static_cast<char*>(nullptr));
        _exit(127);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::printf("%-8s %8ld  failed (status %d)\n", s.c_str(), size, status);
        ++failures;
      }
    }
  }
  return failures ? 1 : 0;
}
