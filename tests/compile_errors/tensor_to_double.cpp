// expect: fluxion::Tensor does not convert to a C++ number: write x.item<double>()
// An explicit conversion of a Tensor to a number.
#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

int main() {
  fx::Tensor loss = fx::sum(fx::ones({3}));
  double value = static_cast<double>(loss);
  return value > 0 ? 0 : 1;
}
