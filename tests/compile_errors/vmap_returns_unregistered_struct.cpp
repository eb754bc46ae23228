// expect: fluxion: the transformed function must return a Tensor or a pytree of Tensors
// A result type that transforms cannot see into.
#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

struct Stats {
  fx::Tensor mean, spread;
};

int main() {
  auto f = [](const fx::Tensor& x) { return Stats{fx::mean(x), fx::max(x) - fx::min(x)}; };
  auto r = fx::vmap(f)(fx::ones({4, 3}));
  (void)r;
}
