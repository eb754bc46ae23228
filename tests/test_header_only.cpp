// Header-only mode: this executable is NOT linked to the fluxion library (see tests/CMakeLists.txt).
// The implementation comes from FLUXION_IMPLEMENTATION, so an implementation file missing from
// include/fluxion/implementation.hpp shows up here as an undefined symbol at link time, and
// helpers that clash when every file shares one translation unit as a compile error.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#define FLUXION_IMPLEMENTATION
#include <fluxion/fluxion.hpp>

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
