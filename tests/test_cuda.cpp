// The CUDA device API: availability, DeviceError messages that say why, and device_put round
// trips. Passes on machines without a GPU (the round trip prints that it was skipped and why).
#include <doctest/doctest.h>

#include <fluxion/fluxion.hpp>

#include <functional>
#include <iostream>
#include <string>

namespace fx = fluxion;

namespace {

std::string device_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const fx::DeviceError& e) { return e.what(); }
  return "(no DeviceError)";
}

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
