// expect: fluxion: the transformed function must return a Tensor or a pytree of Tensors
// A result that holds no Tensor at all.
#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

int main() {
  auto f = [](const fx::Tensor& x) { return static_cast<double>(x.size()); };
  auto r = fx::jvp(f, fx::ones({3}), fx::ones({3}));
  (void)r;
}
