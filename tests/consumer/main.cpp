// Uses Fluxion the way an external project does: #include <fluxion/fluxion.hpp>, link
// fluxion::fluxion (and fluxion::cuda when asked for). Prints "consumer: <sum(sin(x) + 1)>" and
// whether the CUDA backend is linked in, for cmake/RunConsumer.cmake to check.
#include <fluxion/fluxion.hpp>

#include <iomanip>
#include <iostream>

namespace fx = fluxion;

int main() {
  fx::Tensor x = fx::tensor({0.0, 1.0, 2.0});
  fx::Tensor y = fx::lax::sin(x) + 1.0;
  std::cout << "sin(x) + 1 = " << y << "\n";
  std::cout << "consumer: " << std::setprecision(10) << fx::sum(y).item<double>() << "\n";
  std::cout << "cuda compiled: " << std::boolalpha << fx::cuda::compiled() << "\n";
  std::cout << "cuda available: " << fx::cuda::is_available() << "\n";
  if (fx::cuda::is_available()) {  // the same on the GPU: eager kernels, then jit's CUDA plan runner
    fx::Tensor x_gpu = fx::device_put(x, fx::Device::cuda(0));
    std::cout << "consumer cuda eager: " << fx::sum(fx::lax::sin(x_gpu) + 1.0).item<double>() << "\n";
    auto f = fx::jit([](const fx::Tensor& t) { return fx::sum(fx::lax::sin(t) + 1.0); });
    std::cout << "consumer cuda jit: " << f(x_gpu).item<double>() << "\n";
  }
  return 0;
}
