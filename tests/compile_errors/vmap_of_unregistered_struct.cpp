// expect: fluxion: this struct holds Tensors but is not a pytree, so transforms would treat it as a constant
// vmap would pass the unregistered struct through unbatched.
#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

struct Batch {
  fx::Tensor x, y;
};

int main() {
  auto f = [](const Batch& b) { return fx::sum(b.x * b.y); };
  auto r = fx::vmap(f)(Batch{fx::ones({4, 3}), fx::ones({4, 3})});
  (void)r;
}
