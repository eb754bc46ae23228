// expect: fluxion::Tensor has no truth value
// The same through operator! and a loop condition.
#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

int main() {
  fx::Tensor done = fx::scalar(false);
  while (!done) done = fx::scalar(true);
}
