// expect: f must return std::pair{scalar Tensor, aux}: write `return std::make_pair(loss, aux)
// fx::has_aux given, but f returns only the loss.
#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

int main() {
  auto f = [](const fx::Tensor& x) { return fx::sum(x * x); };
  auto g = fx::grad(f, fx::has_aux)(fx::ones({3}));
  (void)g;
}
