// Uses Fluxion the way an external project does: #include <fluxion/fluxion.hpp>, link
// fluxion::fluxion. Prints "consumer: <sum(sin(x) + 1)>" for cmake/RunConsumer.cmake to check.
#include <fluxion/fluxion.hpp>

#include <iomanip>
#include <iostream>

namespace fx = fluxion;

int main() {
  fx::Tensor x = fx::tensor({0.0, 1.0, 2.0});
  fx::Tensor y = fx::lax::sin(x) + 1.0;
  std::cout << "sin(x) + 1 = " << y << "\n";
  std::cout << "consumer: " << std::setprecision(10) << fx::sum(y).item<double>() << "\n";
  std::cout << "cuda available: " << std::boolalpha << fx::cuda::is_available() << "\n";
  return 0;
}
