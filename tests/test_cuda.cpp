// The CUDA device API: availability, DeviceError messages that say why, device_put round trips
// (pytrees too), eager use of device tensors (printing, item, to_vector, products against the CPU),
// mixed devices, and the device memory pool. Passes on machines without a GPU (the GPU cases
// print that they were skipped and why).
#include <doctest/doctest.h>

#include <fluxion/fluxion.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "runtime/backend.hpp"

namespace fx = fluxion;

namespace {

std::string device_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const fx::DeviceError& e) { return e.what(); }
  return "(no DeviceError)";
}

// True (and prints why, naming the case) when there is no GPU to run `what` on.
bool skip_without_gpu(const char* what) {
  if (fx::cuda::is_available()) return false;
  std::cout << "test_cuda: SKIPPED " << what << ": " << fx::cuda::unavailable_reason() << "\n";
  return true;
}

fx::Tensor gpu(const fx::Tensor& x) { return fx::device_put(x, fx::Device::cuda(0)); }

}  // namespace

TEST_CASE("cuda: availability queries never throw and agree with each other") {
  bool available = fx::cuda::is_available();
  CHECK(available == (fx::cuda::device_count() > 0));
  CHECK(available == fx::cuda::unavailable_reason().empty());
  if (available) CHECK(fx::cuda::compiled());
}

TEST_CASE("cuda: device_put to the tensor's own device is a no-op") {
  fx::Tensor x = fx::tensor({1.0, 2.0, 3.0});
  fx::Tensor y = fx::device_put(x, fx::Device::cpu());
  CHECK(y.impl() == x.impl());
  CHECK(y.device() == fx::Device::cpu());
}

TEST_CASE("cuda: without a usable device, asking for one throws DeviceError saying why") {
  if (fx::cuda::is_available()) return;
  std::string reason = fx::cuda::unavailable_reason();
  CAPTURE(reason);
  if (!fx::cuda::compiled()) {
    CHECK(reason.find("not compiled with CUDA") != std::string::npos);
  } else {
    // Compiled, but the driver or the device is missing: the reason quotes the CUDA runtime.
    CHECK(!reason.empty());
  }
  std::string alloc = device_error_of([] { fx::empty({fx::Shape{3}, fx::f32}, fx::Device::cuda(0)); });
  CHECK(alloc.rfind("[cuda] cannot use cuda:0: ", 0) == 0);
  CHECK(alloc.find(reason) != std::string::npos);

  std::string put = device_error_of([] { fx::device_put(fx::ones({2, 2}), fx::Device::cuda(0)); });
  CHECK(put.rfind("[device_put] cannot move f64[2,2] from cpu to cuda:0: ", 0) == 0);
  CHECK(put.find(reason) != std::string::npos);
}

TEST_CASE("cuda: device_put round trip through the GPU") {
  if (!fx::cuda::is_available()) {
    std::cout << "test_cuda: SKIPPED the GPU round trip: " << fx::cuda::unavailable_reason() << "\n";
    return;
  }
  std::cout << "test_cuda: " << fx::cuda::device_count() << " CUDA device(s)\n";
  fx::Tensor x = fx::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  fx::Tensor g = fx::device_put(x, fx::Device::cuda(0));
  CHECK(g.device() == fx::Device::cuda(0));
  CHECK(g.shape() == x.shape());
  CHECK(g.dtype() == fx::f64);
  CHECK(fx::device_put(g, fx::Device::cuda(0)).impl() == g.impl());
  fx::Tensor back = fx::device_put(g, fx::Device::cpu());
  CHECK(back.device() == fx::Device::cpu());
  CHECK(back.to_vector<double>() == x.to_vector<double>());

  fx::Tensor f = fx::device_put(fx::arange(1000, fx::f32), fx::Device::cuda(0));
  CHECK(fx::device_put(f, fx::Device::cpu()).to_vector<float>()[999] == 999.f);
  CHECK_NOTHROW(fx::empty({fx::Shape{0}, fx::f32}, fx::Device::cuda(0)));

  int n = fx::cuda::device_count();
  std::string bad = device_error_of([n] { fx::empty({fx::Shape{1}, fx::f32}, fx::Device::cuda(n)); });
  CHECK(bad.find("there is no device cuda:") != std::string::npos);
}

TEST_CASE("cuda: an op whose inputs live on different devices is a DeviceError naming both") {
  // The check reads only the inputs' devices, before any kernel or allocation: a tracer that
  // claims cuda:0 shows it on any machine.
  fx::Tensor on_cpu = fx::tensor({1.0, 2.0});
  auto tag = std::make_shared<fx::InterpreterTag>();
  fx::Tensor claims_gpu(std::make_shared<fx::TracerImpl>(on_cpu.aval(), fx::Device::cuda(0), tag));
  std::string what = device_error_of([&] {
    fx::eval_primitive(*fx::find_primitive("add"), {on_cpu, claims_gpu}, fx::no_params(), fx::Backend::cpu);
  });
  CHECK(what ==
        "[add] inputs live on different devices (cpu and cuda:0): f64[2] is on cuda:0. Move them with "
        "fx::device_put first (only rank-0 values follow the other inputs' device).");
  if (skip_without_gpu("mixed devices with a real GPU tensor")) return;
  std::string real = device_error_of([&] { (void)(on_cpu + gpu(on_cpu)); });
  CHECK(real.find("inputs live on different devices (cpu and cuda:0)") != std::string::npos);
}

TEST_CASE("cuda: device_put moves pytrees leaf by leaf and keeps their static members") {
  std::tuple<fx::Tensor, std::map<std::string, fx::Tensor>, int> tree{
      fx::tensor({1.0, 2.0}), {{"w", fx::ones({2, 2}, fx::f32)}}, 7};
  auto same = fx::device_put(tree, fx::Device::cpu());  // already there: no copies
  CHECK(std::get<0>(same).impl() == std::get<0>(tree).impl());
  CHECK(std::get<1>(same).at("w").impl() == std::get<1>(tree).at("w").impl());
  CHECK(std::get<2>(same) == 7);
  if (skip_without_gpu("device_put of a pytree to the GPU")) {
    CHECK_THROWS_AS(fx::device_put(tree, fx::Device::cuda(0)), fx::DeviceError);
    return;
  }
  auto on = fx::device_put(tree, fx::Device::cuda(0));
  CHECK(std::get<0>(on).device() == fx::Device::cuda(0));
  CHECK(std::get<1>(on).at("w").device() == fx::Device::cuda(0));
  CHECK(std::get<2>(on) == 7);
  auto back = fx::device_put(on, fx::Device::cpu());
  CHECK(std::get<0>(back).to_vector<double>() == std::vector<double>{1.0, 2.0});
  CHECK(std::get<1>(back).at("w").to_vector<float>() == std::vector<float>(4, 1.f));
}

TEST_CASE("cuda: device tensors print, and item / to_vector read them through a host copy") {
  if (skip_without_gpu("reading device tensors on the host")) return;
  fx::Tensor x = fx::tensor({{1.5, -2.0}, {0.25, 4.0}});
  fx::Tensor g = gpu(x);
  std::ostringstream on_cpu, on_gpu;
  on_cpu << x;
  on_gpu << g;
  CHECK(on_gpu.str() == on_cpu.str());
  CHECK(g.to_vector<double>() == x.to_vector<double>());
  CHECK(g.to_vector<float>() == x.to_vector<float>());  // converted after the copy
  CHECK(gpu(fx::scalar(3.5f)).item<double>() == 3.5);
  CHECK(fx::reshape(g, {4}).to_vector<double>()[3] == 4.0);  // a view of a device buffer
  CHECK_THROWS_AS(g.item<double>(), fx::ShapeError);
  std::ostringstream empty;
  empty << gpu(fx::zeros({0, 3}));
  CHECK(empty.str() == "[]");
}

TEST_CASE("cuda: copies between devices and within one device keep the values") {
  if (skip_without_gpu("copies between devices")) return;
  fx::Tensor x = fx::arange(0, 4096, 1, fx::i64);
  fx::Tensor g = gpu(x);
  const int n = fx::cuda::device_count();
  fx::Tensor last = fx::device_put(g, fx::Device::cuda(n - 1));
  CHECK(last.device() == fx::Device::cuda(n - 1));
  fx::Tensor round = fx::device_put(last, fx::Device::cuda(0));
  CHECK(round.to_vector<int64_t>() == x.to_vector<int64_t>());
  if (n < 2) std::cout << "test_cuda: one device: the copy between devices was the identity\n";
}

TEST_CASE("cuda: dot_general on the GPU (cuBLAS) equals the CPU, f32 and f64, every operand layout") {
  if (skip_without_gpu("dot_general on the GPU")) return;
  fx::runtime::ensure_kernel_table(fx::Backend::cuda);
  const fx::Primitive* dot = fx::find_primitive("dot_general");
  if (!dot || !dot->kernel(fx::Backend::cuda)) {
    std::cout << "test_cuda: SKIPPED dot_general on the GPU: no cuda kernel filed for it yet\n";
    return;
  }
  for (fx::DType dt : {fx::f32, fx::f64}) {
    CAPTURE(dt);
    fx::Tensor a = fx::reshape(fx::linspace(-1.0, 2.0, 2 * 5 * 3, dt), {2, 5, 3});
    fx::Tensor b = fx::reshape(fx::linspace(0.5, -1.5, 2 * 3 * 4, dt), {2, 3, 4});
    fx::Tensor bt = fx::transpose(b, {0, 2, 1});
    const double tol = dt == fx::f32 ? 1e-5 : 1e-12;
    auto check_same = [&](const fx::Tensor& got, const fx::Tensor& want) {
      CHECK(got.device() == fx::Device::cuda(0));
      CHECK(got.aval() == want.aval());
      std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
      REQUIRE(g.size() == w.size());
      for (size_t i = 0; i < g.size(); ++i) CHECK(std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i])));
    };
    check_same(fx::matmul(gpu(a), gpu(b)), fx::matmul(a, b));  // batched, both in place
    check_same(fx::lax::dot_general(gpu(a), gpu(bt), {{2}, {2}}, {{0}, {0}}),
               fx::lax::dot_general(a, bt, {{2}, {2}}, {{0}, {0}}));  // rhs read transposed
    check_same(fx::lax::dot_general(gpu(a), gpu(a), {{1}, {1}}, {{0}, {0}}),
               fx::lax::dot_general(a, a, {{1}, {1}}, {{0}, {0}}));  // lhs read transposed (Gram)
    fx::Tensor z = fx::zeros({3, 0}, dt), w = fx::zeros({0, 2}, dt);
    check_same(fx::matmul(gpu(z), gpu(w)), fx::zeros({3, 2}, dt));  // an empty sum is +0
  }
}

TEST_CASE("cuda: the device pool caches freed buffers and release_cached_memory returns them") {
  if (skip_without_gpu("the device memory pool")) return;
  const int64_t bytes = int64_t(64) << 20;
  {
    fx::Tensor big = fx::empty({fx::Shape{bytes / 4}, fx::f32}, fx::Device::cuda(0));
    fx::cuda::memory::PoolStats during = fx::cuda::memory::stats(0);
    CHECK(during.live_bytes >= bytes);
    CHECK(during.held_bytes >= during.live_bytes);
  }  // freed in stream order: never blocks
  fx::cuda::synchronize(0);
  fx::cuda::memory::PoolStats after = fx::cuda::memory::stats(0);
  CHECK(after.live_bytes < bytes);
  CHECK(after.release_threshold >= 0);
  CHECK(fx::release_cached_memory() >= 0);
  CHECK(fx::cuda::memory::stats(0).held_bytes <= after.held_bytes);
}

TEST_CASE("cuda: an allocation larger than the GPU is an OutOfMemoryError saying what was asked and held") {
  if (skip_without_gpu("device out of memory")) return;
  const int64_t huge = int64_t(1) << 46;  // 64 TiB of f32 elements' bytes: more than any GPU
  std::string what;
  try {
    fx::empty({fx::Shape{huge / 4}, fx::f32}, fx::Device::cuda(0));
  } catch (const fx::OutOfMemoryError& e) { what = e.what(); }
  CAPTURE(what);
  CHECK(what.rfind("[cuda] could not allocate 70368744177664 bytes on cuda:0: ", 0) == 0);
  CHECK(what.find(" bytes there, ") != std::string::npos);
  // The device is still usable afterwards.
  CHECK(gpu(fx::tensor({1.0, 2.0})).to_vector<double>() == std::vector<double>{1.0, 2.0});
}

TEST_CASE("cuda: contexts are made once under concurrent first use, and each thread reads its own values") {
  if (skip_without_gpu("concurrent first use of a device")) return;
  const int threads = 8;
  std::vector<std::vector<double>> got(threads);
  std::vector<std::string> errors(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([t, &got, &errors] {
      try {
        const int device = t % fx::cuda::device_count();
        fx::Tensor g = fx::device_put(fx::full({64}, double(t)), fx::Device::cuda(device));
        got[size_t(t)] = g.to_vector<double>();
      } catch (const std::exception& e) { errors[size_t(t)] = e.what(); }
    });
  for (std::thread& th : pool) th.join();
  for (int t = 0; t < threads; ++t) {
    CAPTURE(t);
    CHECK(errors[size_t(t)] == "");
    CHECK(got[size_t(t)] == std::vector<double>(64, double(t)));
  }
}

TEST_CASE("cuda: an eager chain on device tensors equals the CPU (kernels, streams, host reads together)") {
  if (skip_without_gpu("an eager chain on the GPU")) return;
  for (fx::DType dt : {fx::f32, fx::f64}) {
    CAPTURE(dt);
    fx::Tensor x = fx::reshape(fx::linspace(-2.0, 3.0, 6 * 50, dt), {6, 50});
    auto chain = [](const fx::Tensor& v) { return fx::sum(fx::sin(v) * v + v, {1}); };
    fx::Tensor want = chain(x), got;
    try {
      got = chain(gpu(x));
    } catch (const fx::NotImplementedError& e) {
      std::cout << "test_cuda: SKIPPED the eager chain on the GPU: " << e.what() << "\n";
      return;
    }
    CHECK(got.device() == fx::Device::cuda(0));
    std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
    REQUIRE(g.size() == w.size());
    const double tol = dt == fx::f32 ? 1e-5 : 1e-12;
    for (size_t i = 0; i < g.size(); ++i) CHECK(std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i])));
  }
}

TEST_CASE("cuda: rank-0 CPU values follow the device, and transforms run unchanged on device tensors") {
  if (skip_without_gpu("transforms of a function of device tensors")) return;
  fx::Tensor x_cpu = fx::tensor({0.5, 1.0, 2.0});
  fx::Tensor x = gpu(x_cpu);
  fx::Tensor y = x * 2.0 + 1.0;  // the literals are rank-0 CPU tensors
  CHECK(y.device() == fx::Device::cuda(0));
  CHECK(fx::device_put(y, fx::Device::cpu()).to_vector<double>() == std::vector<double>{2.0, 3.0, 5.0});
  auto f = [](const fx::Tensor& v) { return fx::sum(fx::sin(v) * v + fx::exp(v) / 3.0); };
  fx::Tensor g = fx::grad(f)(x), g_cpu = fx::grad(f)(x_cpu);
  CHECK(g.device() == fx::Device::cuda(0));
  std::vector<double> got = fx::device_put(g, fx::Device::cpu()).to_vector<double>(), want = g_cpu.to_vector<double>();
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-12));
  fx::Tensor batched = fx::vmap([&](const fx::Tensor& v) { return fx::grad(f)(v); })(gpu(fx::ones({4, 3})));
  CHECK(batched.device() == fx::Device::cuda(0));
  CHECK(batched.shape() == fx::Shape{4, 3});
}

// ---- the GPU-only fast paths: linalg_solve through cuBLAS / cuSOLVER, argmax/argmin and cumsum
// through CUB (backends/cuda/kernels/products_cusolver.cuh, reductions_cub.cuh) ----

namespace {

// A (batch, n, n) f64 matrix that needs row pivoting but is well conditioned: random in [-1, 1)
// plus 2 sqrt(n) I (singular values within a small factor of each other), rows shuffled.
std::vector<double> shuffled_dominant(int64_t batch, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> a(static_cast<size_t>(batch * n * n));
  std::vector<int64_t> rows(static_cast<size_t>(n));
  for (int64_t bi = 0; bi < batch; ++bi) {
    std::iota(rows.begin(), rows.end(), int64_t(0));
    std::shuffle(rows.begin(), rows.end(), rng);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        a[static_cast<size_t>((bi * n + rows[static_cast<size_t>(i)]) * n + j)] =
            u(rng) + (i == j ? 2.0 * std::sqrt(static_cast<double>(n)) : 0.0);
  }
  return a;
}

std::vector<double> uniform_values(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(static_cast<size_t>(count));
  for (double& x : v) x = u(rng);
  return v;
}

}  // namespace

TEST_CASE("cuda: linalg_solve on the GPU (cuBLAS batched LU, cuSOLVER) equals the CPU, n = 16, 64, 200") {
  if (skip_without_gpu("linalg_solve on the GPU")) return;
  struct Case {
    int64_t batch, n, k;
  };
  // n = 16: cuBLAS's batched LU; 64 and 200: cuSOLVER's getrf/getrs, matrix by matrix.
  for (const Case& c : {Case{6, 16, 3}, Case{3, 64, 2}, Case{2, 200, 1}, Case{2, 200, 5}}) {
    CAPTURE(c.n);
    CAPTURE(c.k);
    const fx::Tensor a64 =
        fx::from_vector(shuffled_dominant(c.batch, c.n, 7u + static_cast<uint32_t>(c.n)), fx::Shape{c.batch, c.n, c.n});
    const fx::Tensor b64 = fx::from_vector(uniform_values(c.batch * c.n * c.k, 11u), fx::Shape{c.batch, c.n, c.k});
    for (fx::DType dt : {fx::f32, fx::f64}) {
      CAPTURE(dt);
      const fx::Tensor a = fx::astype(a64, dt), b = fx::astype(b64, dt);
      const fx::Tensor got = fx::lax::linalg_solve(gpu(a), gpu(b));
      CHECK(got.device() == fx::Device::cuda(0));
      CHECK(got.aval() == fx::AbstractValue{fx::Shape{c.batch, c.n, c.k}, dt});
      // The GPU solves in f64 whatever the dtype: f32 results are the f64 solution of the f32 data
      // rounded once, so they are compared with that, to about one f32 rounding.
      const fx::Tensor want = fx::lax::linalg_solve(fx::astype(a, fx::f64), fx::astype(b, fx::f64));
      const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
      REQUIRE(g.size() == w.size());
      const double tol = dt == fx::f32 ? 2e-7 : 1e-12;
      double scale = 0;
      for (double v : w) scale = std::max(scale, std::abs(v));
      for (size_t i = 0; i < g.size(); ++i) CHECK(std::abs(g[i] - w[i]) <= tol * (std::abs(w[i]) + 0.1 * scale));
    }
  }
}

TEST_CASE("cuda: a singular matrix in a GPU linalg_solve batch raises the reference's Error naming its index") {
  if (skip_without_gpu("linalg_solve of a singular batch on the GPU")) return;
  for (int64_t n : {4, 64}) {  // cuBLAS's batched LU, then cuSOLVER's
    CAPTURE(n);
    std::vector<double> a = shuffled_dominant(3, n, 5u);
    // Matrix 1 gets a zero column: its elimination keeps that column's entries exactly zero, so
    // every LU of it meets an exactly zero pivot (the column where is the library's own).
    for (int64_t i = 0; i < n; ++i) a[static_cast<size_t>((n + i) * n + 2)] = 0.0;
    for (fx::DType dt : {fx::f32, fx::f64}) {
      CAPTURE(dt);
      const fx::Tensor at = fx::astype(fx::from_vector(a, fx::Shape{3, n, n}), dt);
      const fx::Tensor bt = fx::ones({3, n, 2}, dt);
      std::string cpu_error, gpu_error;
      try {
        fx::lax::linalg_solve(at, bt);
      } catch (const fx::Error& e) { cpu_error = e.what(); }
      try {
        fx::lax::linalg_solve(gpu(at), gpu(bt)).to_vector<double>();
      } catch (const fx::DeviceError& e) {
        FAIL_CHECK("a DeviceError instead of the singular-matrix Error: " << e.what());
      } catch (const fx::Error& e) { gpu_error = e.what(); }
      CHECK(cpu_error.find("the matrix at batch index 1 of") != std::string::npos);
      CHECK(gpu_error.find("the matrix at batch index 1 of") != std::string::npos);
      CHECK(gpu_error.find("is singular (zero pivot in column") != std::string::npos);
      // Up to the column, which is the first zero pivot of the library's factorization.
      CHECK(gpu_error.substr(0, gpu_error.find("column")) == cpu_error.substr(0, cpu_error.find("column")));
    }
  }
}

TEST_CASE("cuda: argmax/argmin over long rows on the GPU (CUB) keep the first extremum and the first NaN") {
  if (skip_without_gpu("argmax/argmin over long rows on the GPU")) return;
  const int64_t rows = 5, n = 5000;  // longer than the portable path's 4096-element chunks
  std::vector<double> x = uniform_values(rows * n, 3u);
  auto at = [&](int64_t r, int64_t j) -> double& { return x[static_cast<size_t>(r * n + j)]; };
  // Row 0: the max 2 at 4100, 17 and 4999 (ties across chunks), the min -2 at 4098 and 9.
  at(0, 4100) = at(0, 17) = at(0, 4999) = 2.0;
  at(0, 4098) = at(0, 9) = -2.0;
  // Row 1: NaN at 3000 and 1200 beats every number, for argmax and argmin alike: 1200.
  at(1, 3000) = at(1, 1200) = std::nan("");
  // Row 2: all zeros, -0 first: the first index (-0 == +0).
  for (int64_t j = 0; j < n; ++j) at(2, j) = j < 10 ? -0.0 : 0.0;
  // Row 3: the extremes at the ends; row 4: a NaN at the very end.
  at(3, 0) = 3.0;
  at(3, n - 1) = -3.0;
  at(4, n - 1) = std::nan("");
  const std::vector<int64_t> want_max{17, 1200, 0, 0, n - 1}, want_min{9, 1200, 0, n - 1, n - 1};
  for (fx::DType dt : {fx::f32, fx::f64}) {
    for (fx::DType index : {fx::i32, fx::i64}) {
      CAPTURE(dt);
      CAPTURE(index);
      const fx::Tensor v = gpu(fx::astype(fx::from_vector(x, fx::Shape{rows, n}), dt));
      const fx::Tensor mx = fx::lax::argmax(v, 1, index), mn = fx::lax::argmin(v, 1, index);
      CHECK(mx.device() == fx::Device::cuda(0));
      CHECK(mx.dtype() == index);
      CHECK(mx.to_vector<int64_t>() == want_max);
      CHECK(mn.to_vector<int64_t>() == want_min);
    }
  }
  // Integers, one row (cub::DeviceReduce): ties keep the first.
  std::vector<int32_t> ints(3000, 7);
  ints[2500] = ints[300] = 9;
  ints[1000] = ints[2999] = -4;
  const fx::Tensor iv = gpu(fx::from_vector(ints));
  CHECK(fx::lax::argmax(iv, 0).to_vector<int64_t>() == std::vector<int64_t>{300});
  CHECK(fx::lax::argmin(iv, 0).to_vector<int64_t>() == std::vector<int64_t>{1000});
}

TEST_CASE("cuda: cumsum over long rows on the GPU (CUB) equals the long double prefix sums, forward and reverse") {
  if (skip_without_gpu("cumsum over long rows on the GPU")) return;
  for (int64_t n : {256, 10000, 100003}) {
    const int64_t rows = n > 50000 ? 1 : 3;
    CAPTURE(n);
    const std::vector<double> x = uniform_values(rows * n, 19u);
    for (bool reverse : {false, true}) {
      CAPTURE(reverse);
      for (fx::DType dt : {fx::f32, fx::f64}) {
        CAPTURE(dt);
        const fx::Tensor v = fx::astype(fx::from_vector(x, fx::Shape{rows, n}), dt);
        const fx::Tensor got = fx::lax::cumsum(gpu(v), 1, reverse);
        CHECK(got.device() == fx::Device::cuda(0));
        const std::vector<double> g = got.to_vector<double>(), in = v.to_vector<double>();
        // The prefix sums nearly exactly (long double with Neumaier's compensation), rounded once to
        // dt; each prefix within about one rounding of itself plus a tiny share of the sum of
        // magnitudes (the error of the GPU's compensated sums, whatever CUB's order).
        const double eps = dt == fx::f32 ? 1.2e-7 : 2.3e-16;
        bool all_close = true;
        for (int64_t r = 0; r < rows; ++r) {
          long double sum = 0, comp = 0, magnitude = 0;
          for (int64_t s = 0; s < n; ++s) {
            const size_t e = static_cast<size_t>(r * n + (reverse ? n - 1 - s : s));
            const long double t = sum + in[e];
            comp += std::abs(sum) >= std::abs(in[e]) ? (sum - t) + in[e] : (in[e] - t) + sum;
            sum = t;
            magnitude += std::abs(in[e]);
            const long double exact = sum + comp;
            const double want =
                dt == fx::f32 ? static_cast<double>(static_cast<float>(exact)) : static_cast<double>(exact);
            if (std::abs(g[e] - want) > eps * std::abs(want) + 1e-20 * static_cast<double>(magnitude)) {
              all_close = false;
              FAIL_CHECK("row " << r << ", element " << e << ": got " << g[e] << ", want " << want);
              break;
            }
          }
        }
        CHECK(all_close);
      }
      // Integers wrap: i32 prefix sums of large values, exactly.
      std::vector<int32_t> ints(static_cast<size_t>(rows * n));
      for (size_t e = 0; e < ints.size(); ++e)
        ints[e] = static_cast<int32_t>((e * 2654435761u) % 2000000000u) - 1000000000;
      const std::vector<int64_t> gi =
          fx::lax::cumsum(gpu(fx::from_vector(ints, fx::Shape{rows, n})), 1, reverse).to_vector<int64_t>();
      bool ints_equal = true;
      for (int64_t r = 0; r < rows && ints_equal; ++r) {
        uint32_t sum = 0;
        for (int64_t s = 0; s < n; ++s) {
          const size_t e = static_cast<size_t>(r * n + (reverse ? n - 1 - s : s));
          sum += static_cast<uint32_t>(ints[e]);
          if (gi[e] != static_cast<int32_t>(sum)) {
            ints_equal = false;
            FAIL_CHECK("i32 row " << r << ", element " << e << ": got " << gi[e] << ", want "
                                  << static_cast<int32_t>(sum));
            break;
          }
        }
      }
      CHECK(ints_equal);
    }
  }
}
