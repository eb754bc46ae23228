// expect: fluxion: this struct holds Tensors but is not a pytree, so transforms would treat it as a constant
// jit would take the unregistered struct for a static argument (part of the cache key).
#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

struct Model {
  int layers;
  fx::Tensor w;
};

int main() {
  auto f = [](const Model& m, const fx::Tensor& x) { return x * m.w; };
  auto r = fx::jit(f)(Model{1, fx::ones({3})}, fx::ones({3}));
  (void)r;
}
