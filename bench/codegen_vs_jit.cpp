// emit_cpp's generated C++ against fx::jit (issue 33), on the two programs of
// tests/codegen_problems.hpp: the gradient of a 2-layer tanh MLP (f32, two sizes) and a damped
// pendulum integrated 100 RK4 steps in fx::scan (f64). The emitted file is compiled at run time
// with the system compiler into a shared library (once with -O2, once with -O2 -march=native, the
// flags the library itself is built with) and called through dlsym with a preallocated workspace.
// Each time is the median over 15 batches of calls (a batch lasts about 20 ms), in microseconds per
// call. The emitted results are checked against jit's before timing.
//   ./build/bench/codegen_vs_jit [--quick]
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "codegen_problems.hpp"

#ifndef FLUXION_BENCH_CXX
#define FLUXION_BENCH_CXX "c++"
#endif

namespace fx = fluxion;
namespace cp = fluxion::testing::codegen_problems;
using fx::Tensor;

namespace {

bool g_quick = false;

/// Median microseconds per call of `f` over 15 batches (3 in --quick mode).
double median_us(const std::function<void()>& f) {
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < 3; ++i) f();
  int64_t per_batch = 1;
  for (;;) {  // calls per batch: about 20 ms
    const auto t0 = clock::now();
    for (int64_t i = 0; i < per_batch; ++i) f();
    if (std::chrono::duration<double>(clock::now() - t0).count() > 0.02 || per_batch > (1 << 24)) break;
    per_batch *= 2;
  }
  std::vector<double> us;
  for (int b = 0; b < (g_quick ? 3 : 15); ++b) {
    const auto t0 = clock::now();
    for (int64_t i = 0; i < per_batch; ++i) f();
    us.push_back(std::chrono::duration<double, std::micro>(clock::now() - t0).count() / static_cast<double>(per_batch));
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

/// The emitted `source` compiled with `flags` into a shared library, loaded.
std::filesystem::path work_dir() {
  return std::filesystem::temp_directory_path() / ("fluxion_codegen_bench_" + std::to_string(::getpid()));
}

void* compile_and_load(const std::string& source, const std::string& stem, const std::string& flags) {
  const auto dir = work_dir();
  std::filesystem::create_directories(dir);
  const auto cpp = dir / (stem + ".cpp"), so = dir / (stem + ".so");
  std::ofstream(cpp) << source;
  const std::string cmd =
      std::string(FLUXION_BENCH_CXX) + " -std=c++17 " + flags + " -shared -fPIC -o " + so.string() + " " + cpp.string();
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "failed: %s\n", cmd.c_str());
    std::exit(1);
  }
  void* lib = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "dlopen failed for %s: %s\n", so.c_str(), dlerror());
    std::exit(1);
  }
  return lib;
}

template <class Fn> Fn symbol(void* lib, const std::string& name) {
  void* p = dlsym(lib, name.c_str());
  if (!p) {
    std::fprintf(stderr, "dlsym failed for %s\n", name.c_str());
    std::exit(1);
  }
  return reinterpret_cast<Fn>(p);
}

/// Largest |a - b| / (1 + |b|) over the elements.
double worst_difference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]) / (1 + std::abs(y[i])));
  return worst;
}

template <class T> const T* in(const Tensor& t) { return t.data<T>(); }
template <class T> T* out(const Tensor& t) { return static_cast<T*>(t.array().data()); }

struct Workspace {
  explicit Workspace(size_t n) : raw(n + 64) {}
  void* get() {
    auto at = reinterpret_cast<uintptr_t>(raw.data());
    return raw.data() + (64 - at % 64) % 64;
  }
  std::vector<unsigned char> raw;
};

void row(const char* name, double jit_us, double o2_us, double native_us, double diff) {
  std::printf("%-34s %12.2f %14.2f %22.2f %10.2fx %10.1e\n", name, jit_us, o2_us, native_us, jit_us / native_us, diff);
}

void bench_mlp(int64_t batch, int64_t in_dim, int64_t hidden, int64_t out_dim) {
  const std::vector<Tensor> a = cp::mlp_args(batch, in_dim, hidden, out_dim, fx::f32);
  auto jitted = fx::jit(cp::mlp_grad());
  const auto want = jitted(a[0], a[1], a[2], a[3], a[4], a[5]);
  const std::string source = fx::emit_cpp(cp::mlp_grad_jaxpr(a), "mlp_grad");
  using Fn = void (*)(const float*, const float*, const float*, const float*, const float*, const float*, float*,
                      float*, float*, float*, void*);
  using Size = size_t (*)();
  std::vector<Tensor> got = {fx::empty(a[0].aval()), fx::empty(a[1].aval()), fx::empty(a[2].aval()),
                             fx::empty(a[3].aval())};
  double times[2] = {0, 0}, diff = 0;
  const char* flags[2] = {"-O2", "-O2 -march=native"};
  for (int k = 0; k < 2; ++k) {
    const std::string stem = "mlp_" + std::to_string(batch) + "_" + std::to_string(k);
    void* lib = compile_and_load(source, stem, flags[k]);
    auto fn = symbol<Fn>(lib, "mlp_grad_with_workspace");
    auto size = symbol<Size>(lib, "mlp_grad_workspace_size");
    Workspace ws(size());
    auto call = [&] {
      fn(in<float>(a[0]), in<float>(a[1]), in<float>(a[2]), in<float>(a[3]), in<float>(a[4]), in<float>(a[5]),
         out<float>(got[0]), out<float>(got[1]), out<float>(got[2]), out<float>(got[3]), ws.get());
    };
    call();
    diff = std::max({diff, worst_difference(got[0], std::get<0>(want)), worst_difference(got[1], std::get<1>(want)),
                     worst_difference(got[2], std::get<2>(want)), worst_difference(got[3], std::get<3>(want))});
    times[k] = median_us(call);
  }
  const double jit_us = median_us([&] { (void)jitted(a[0], a[1], a[2], a[3], a[4], a[5]); });
  char name[96];
  std::snprintf(name, sizeof name, "mlp grad f32 %lldx%lld-%lld-%lld", static_cast<long long>(batch),
                static_cast<long long>(in_dim), static_cast<long long>(hidden), static_cast<long long>(out_dim));
  row(name, jit_us, times[0], times[1], diff);
}

void bench_pendulum() {
  const Tensor params = fx::tensor<double>({9.81, 0.3}), s0 = fx::tensor<double>({1.2, 0.0});
  auto f = [](const Tensor& p, const Tensor& s) { return cp::pendulum_rk4(p, s, 100, 0.01); };
  auto jitted = fx::jit(f);
  const auto want = jitted(params, s0);
  const std::string source = fx::emit_cpp(cp::pendulum_jaxpr(params, s0, 100, 0.01), "pendulum");
  using Fn = void (*)(const double*, const double*, double*, double*, void*);
  using Size = size_t (*)();
  Tensor final_state = fx::empty(want.first.aval()), thetas = fx::empty(want.second.aval());
  double times[2] = {0, 0}, diff = 0;
  const char* flags[2] = {"-O2", "-O2 -march=native"};
  for (int k = 0; k < 2; ++k) {
    const std::string stem = "pendulum_" + std::to_string(k);
    void* lib = compile_and_load(source, stem, flags[k]);
    auto fn = symbol<Fn>(lib, "pendulum_with_workspace");
    auto size = symbol<Size>(lib, "pendulum_workspace_size");
    Workspace ws(size());
    auto call = [&] {
      fn(in<double>(params), in<double>(s0), out<double>(final_state), out<double>(thetas), ws.get());
    };
    call();
    diff = std::max({diff, worst_difference(final_state, want.first), worst_difference(thetas, want.second)});
    times[k] = median_us(call);
  }
  const double jit_us = median_us([&] { (void)jitted(params, s0); });
  row("pendulum rk4 f64, 100 scan steps", jit_us, times[0], times[1], diff);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) g_quick = g_quick || std::strcmp(argv[i], "--quick") == 0;
  std::printf("%-34s %12s %14s %22s %11s %10s\n", "case (us per call, median)", "fx::jit", "emitted -O2",
              "emitted -O2 -march=nat", "jit/native", "max diff");
  bench_mlp(32, 8, 16, 3);
  bench_mlp(256, 64, 128, 10);
  bench_pendulum();
  std::error_code ignored;
  std::filesystem::remove_all(work_dir(), ignored);  // the libraries stay mapped until exit
  return 0;
}
