// Side-by-side workload W7 (issue 4 item 6): tiny scalar functions, where fixed costs dominate.
//   grad_sin            grad of sin(x)*y + x^2/y w.r.t. both arguments (f32 scalars)
//   rosenbrock_hessian  hessian of the d-dimensional Rosenbrock function, d = 2 and 10 (f32)
// Besides the steady-state time per call, every case reports
//   allocs_per_call      heap allocations per call: global operator new (all forms) and
//                        aligned_alloc (Fluxion's tensor buffers) are counted by this file;
//                        plain malloc calls (e.g. Eigen temporaries inside kernels) are not
//   first_call_s         the first call of a fresh callable (fluxion_jit: trace + compile + run)
//   eqns                 equations in make_jaxpr of the transformed function
//   first_call_us_per_eqn first_call_s per equation, in microseconds
//   ./build-bench/bench/bench_workloads_tiny
#include <cstdlib>
#include <new>

#include "workloads.hpp"

// ---------------------------------------------------------------- allocation counting

namespace {
std::atomic<uint64_t> g_allocs{0};

void* counted_malloc(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* counted_aligned(std::size_t n, std::size_t align) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  void* p = nullptr;
  if (align < sizeof(void*)) align = sizeof(void*);
  return posix_memalign(&p, align, n ? n : 1) == 0 ? p : nullptr;
}
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = counted_malloc(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted_malloc(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = counted_aligned(n, static_cast<std::size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  if (void* p = counted_aligned(n, static_cast<std::size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_aligned(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return counted_aligned(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

// Fluxion allocates tensor buffers with std::aligned_alloc (src/tensor.cpp); this definition in
// the executable takes precedence over libc's, so those count too (freed with std::free as usual).
extern "C" void* aligned_alloc(std::size_t align, std::size_t n) noexcept { return counted_aligned(n, align); }

namespace bench_t {

using wl::MatR;

// ---------------------------------------------------------------- the functions

fx::Tensor sin_fn(const fx::Tensor& x, const fx::Tensor& y) { return fx::sin(x) * y + x * x / y; }

fx::Tensor rosenbrock(const fx::Tensor& x) {
  int64_t d = x.shape()[0];
  fx::Tensor head = fx::slice(x, {0}, {d - 1}), tail = fx::slice(x, {1}, {d});
  return fx::sum(100.0 * fx::square(tail - fx::square(head)) + fx::square(1.0 - head));
}

/// Equations in the Jaxpr of `f` at `args` (the program jit stages).
template <class F, class... A> double count_eqns(const F& f, const A&... args) {
  return static_cast<double>(fx::make_jaxpr(f)(args...).equations.size());
}

void set_eqn_counters(benchmark::State& st, double eqns) {
  st.counters["eqns"] = eqns;
  auto it = st.counters.find("first_call_s");
  if (it != st.counters.end() && eqns > 0) st.counters["first_call_us_per_eqn"] = it->second.value * 1e6 / eqns;
}

// ---------------------------------------------------------------- grad_sin

constexpr float kX = 0.7f, kY = 1.3f;

void register_grad_sin() {
  auto x = std::make_shared<fx::Tensor>(fx::scalar(kX));
  auto y = std::make_shared<fx::Tensor>(fx::scalar(kY));
  const double gx = std::cos(double(kX)) * kY + 2.0 * kX / kY;
  const double gy = std::sin(double(kX)) - double(kX) * kX / (double(kY) * kY);
  auto check = [=](const std::tuple<fx::Tensor, fx::Tensor>& g) {
    return wl::compare_values("grad", {std::get<0>(g).item<double>(), std::get<1>(g).item<double>()}, {gx, gy}, 1e-6);
  };
  std::string size = "/grad_sin:scalar";
  wl::reg(
      "W7/fluxion_jit" + size,
      [=](benchmark::State& st) {
        auto g = fx::jit(fx::grad(sin_fn, fx::argnums<0, 1>));
        wl::run_case(
            st, [&] { return g(*x, *y); }, check, &g_allocs);
        set_eqn_counters(st, count_eqns(fx::grad(sin_fn, fx::argnums<0, 1>), *x, *y));
      },
      benchmark::kMicrosecond);
  wl::reg(
      "W7/fluxion_eager" + size,
      [=](benchmark::State& st) {
        auto g = fx::grad(sin_fn, fx::argnums<0, 1>);
        wl::run_case(
            st, [&] { return g(*x, *y); }, check, &g_allocs);
        set_eqn_counters(st, count_eqns(g, *x, *y));
      },
      benchmark::kMicrosecond);
  wl::reg(
      "W7/eigen" + size,
      [=](benchmark::State& st) {
        // By hand: two scalar expressions (volatile inputs so the compiler cannot fold them).
        volatile float xv = kX, yv = kY;
        wl::run_case(
            st,
            [&] {
              float a = xv, b = yv;
              return std::make_pair(std::cos(a) * b + 2.0f * a / b, std::sin(a) - a * a / (b * b));
            },
            [&](std::pair<float, float> g) {
              return wl::compare_values("grad", {g.first, g.second}, {gx, gy}, 1e-6);
            },
            &g_allocs);
      },
      benchmark::kNanosecond);
}

// ---------------------------------------------------------------- rosenbrock_hessian

std::vector<double> rosen_point(int64_t d) {
  std::vector<double> v(static_cast<size_t>(d));
  for (int64_t i = 0; i < d; ++i) v[static_cast<size_t>(i)] = 1.2 - 0.15 * static_cast<double>(i);
  return v;
}

/// The tridiagonal Hessian by hand into a preallocated matrix.
template <class T> void rosen_hessian(const T* x, int64_t d, MatR<T>& H) {
  H.setZero();
  for (int64_t i = 0; i + 1 < d; ++i) {
    T xi = x[i], xn = x[i + 1];
    H(i, i) += T(2) - T(400) * (xn - xi * xi) + T(800) * xi * xi;
    H(i + 1, i + 1) += T(200);
    H(i, i + 1) = H(i + 1, i) = T(-400) * xi;
  }
}

void register_rosenbrock() {
  for (int64_t d : {2, 10}) {
    std::vector<double> pt = rosen_point(d);
    auto x = std::make_shared<fx::Tensor>(wl::make_tensor<float>(pt, {d}));
    std::vector<float> xf(pt.begin(), pt.end());
    std::vector<double> want;
    {
      std::vector<double> xd(xf.begin(), xf.end());
      MatR<double> H(d, d);
      rosen_hessian(xd.data(), d, H);
      wl::append_values(H, want);
    }
    auto check = [want](const fx::Tensor& h) { return wl::compare_values("hessian", wl::flat_values(h), want, 1e-5); };
    std::string size = "/rosenbrock_hessian:d=" + std::to_string(d);
    wl::reg(
        "W7/fluxion_jit" + size,
        [=](benchmark::State& st) {
          auto h = fx::jit(fx::hessian(rosenbrock));
          wl::run_case(
              st, [&] { return h(*x); }, check, &g_allocs);
          set_eqn_counters(st, count_eqns(fx::hessian(rosenbrock), *x));
        },
        benchmark::kMicrosecond);
    wl::reg(
        "W7/fluxion_eager" + size,
        [=](benchmark::State& st) {
          auto h = fx::hessian(rosenbrock);
          wl::run_case(
              st, [&] { return h(*x); }, check, &g_allocs);
          set_eqn_counters(st, count_eqns(h, *x));
        },
        benchmark::kMicrosecond);
    wl::reg(
        "W7/eigen" + size,
        [=](benchmark::State& st) {
          MatR<float> H(d, d);
          std::vector<float> xs = xf;
          wl::run_case(
              st,
              [&] {
                benchmark::DoNotOptimize(xs.data());
                rosen_hessian(xs.data(), d, H);
                return H.data();
              },
              [&](const float*) {
                std::vector<double> got;
                wl::append_values(H, got);
                return wl::compare_values("hessian", got, want, 1e-5);
              },
              &g_allocs);
        },
        benchmark::kNanosecond);
  }
}

}  // namespace bench_t

int main(int argc, char** argv) {
  return wl::run_main(argc, argv, [] {
    bench_t::register_grad_sin();
    bench_t::register_rosenbrock();
  });
}
