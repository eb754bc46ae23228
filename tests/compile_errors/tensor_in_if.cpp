// expect: fluxion::Tensor has no truth value: for a concrete value write `if ((x > 0).item<bool>())`
// A comparison of Tensors is a Tensor of bools, not a C++ bool.
#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

int main() {
  fx::Tensor x = fx::scalar(1.0);
  if (x > 0) return 1;
  return 0;
}
