// Header-only mode: this executable is NOT linked to the fluxion library (see tests/CMakeLists.txt).
// The implementation comes from FLUXION_IMPLEMENTATION, so an implementation file missing from
// include/fluxion/implementation.hpp shows up here as an undefined symbol at link time, and
// helpers that clash when every file shares one translation unit as a compile error.
// It also builds with FLUXION_LIGHT_KERNELS=1, as a notebook does (see fluxion/config.hpp): the CPU
// backend then runs the plain-loop kernels, checked here against values computed in the test.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#define FLUXION_IMPLEMENTATION
#define FLUXION_LIGHT_KERNELS 1
#include <fluxion/fluxion.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

namespace fx = fluxion;

TEST_CASE("header-only: eager ops compute numpy's values") {
  fx::Tensor x = fx::tensor({0.0, 1.0, 2.0});
  fx::Tensor y = fx::sin(x) * 2.0 + 1.0;
  CHECK(y.dtype() == fx::f64);
  CHECK(y.to_vector<double>()[1] == doctest::Approx(1.0 + 2.0 * 0.8414709848));
  CHECK(fx::sum(x).item<double>() == 3.0);

  fx::Tensor a = fx::tensor({{1.f, 2.f}, {3.f, 4.f}});
  fx::Tensor m = fx::matmul(a, a);
  CHECK(m.dtype() == fx::f32);
  CHECK(m.to_vector<float>() == std::vector<float>{7.f, 10.f, 15.f, 22.f});

  std::ostringstream os;
  os << fx::tensor({1.5, 2.0});
  CHECK(os.str() == "[1.5 2. ]");
}

TEST_CASE("header-only: make_jaxpr stages a function") {
  auto f = [](const fx::Tensor& x, const fx::Tensor& w) { return fx::sum(fx::tanh(fx::matmul(x, w)) * 2.0); };
  fx::Jaxpr j = fx::make_jaxpr(f)(fx::ones({4, 8}, fx::f32), fx::ones({8, 2}, fx::f32));
  fx::typecheck(j);
  std::ostringstream os;
  os << j;
  CAPTURE(os.str());
  CHECK(os.str().find("dot_general") != std::string::npos);
  CHECK(os.str().find("tanh") != std::string::npos);
  CHECK(os.str().find("reduce_sum") != std::string::npos);
  CHECK(j.in_avals().size() == 2);
  CHECK(j.out_avals().size() == 1);
}

TEST_CASE("header-only: without the CUDA library, CUDA is reported unavailable") {
  CHECK_FALSE(fx::cuda::compiled());
  CHECK_FALSE(fx::cuda::is_available());
  CHECK(fx::cuda::device_count() == 0);
  CHECK_THROWS_AS(fx::device_put(fx::ones({2}), fx::Device::cuda(0)), fx::DeviceError);
}

TEST_CASE("header-only: the light CPU kernels (eager and fused under jit) compute the right values") {
  static_assert(fx::kLightKernels, "this test runs the light kernels");
  const int n = 1000;
  std::vector<float> xs(n);
  for (int i = 0; i < n; ++i) xs[i] = 0.01f * static_cast<float>(i - 500);
  fx::Tensor x = fx::from_vector(xs);
  auto f = [](const fx::Tensor& v) { return fx::tanh(v) * v + fx::exp(-(v * v)); };
  fx::Tensor eager = f(x), jitted = fx::jit(f)(x);
  fx::Tensor g = fx::jit(fx::grad([&](const fx::Tensor& v) { return fx::sum(f(v)); }))(x);
  for (int i = 0; i < n; ++i) {
    const double v = xs[i], t = std::tanh(v), want = t * v + std::exp(-v * v);
    CHECK(eager.to_vector<float>()[i] == doctest::Approx(want).epsilon(1e-5));
    CHECK(jitted.to_vector<float>()[i] == doctest::Approx(want).epsilon(1e-5));
    CHECK(g.to_vector<float>()[i] == doctest::Approx((1 - t * t) * v + t - 2 * v * std::exp(-v * v)).epsilon(1e-4));
  }
  fx::Tensor m = fx::tensor({{0.0, 1.0, 2.0, 3.0}, {4.0, 5.0, 6.0, 7.0}, {8.0, 9.0, 10.0, 11.0}});
  CHECK(fx::sum(m, {1}).to_vector<double>() == std::vector<double>{6, 22, 38});
  CHECK(fx::max(m, {0}).to_vector<double>() == std::vector<double>{8, 9, 10, 11});
  CHECK(fx::argmax(fx::tensor({1.0, 5.0, 2.0})).item<int64_t>() == 1);
  CHECK(fx::matmul(m, fx::transpose(m)).to_vector<double>()[8] == 8 * 8 + 9 * 9 + 10 * 10 + 11 * 11);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(fx::astype(fx::tensor({1.7f, -2.5f, nan, 3e9f}), fx::i32).to_vector<int32_t>() ==
        std::vector<int32_t>{1, -2, 0, std::numeric_limits<int32_t>::max()});
  CHECK(fx::where(fx::tensor({1.0, -1.0}) > 0.0, fx::tensor({1.0, 2.0}), fx::tensor({3.0, 4.0})).to_vector<double>() ==
        std::vector<double>{1, 4});
  fx::Tensor a = fx::tensor({{4.0, 1.0}, {2.0, 3.0}}), b = fx::tensor({1.0, 2.0});
  fx::Tensor sol = fx::solve(a, b);  // [[4 1] [2 3]] x = [1 2]: x = [0.1, 0.6]
  CHECK(sol.to_vector<double>()[0] == doctest::Approx(0.1));
  CHECK(sol.to_vector<double>()[1] == doctest::Approx(0.6));
}
