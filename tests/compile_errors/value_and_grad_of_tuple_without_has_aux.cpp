// expect: f returns a std::pair or std::tuple: for a loss with auxiliary outputs write fx::grad(f, fx::has_aux)
// The same mistake through value_and_grad, with a std::tuple.
#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

int main() {
  auto f = [](const fx::Tensor& x) { return std::make_tuple(fx::sum(x), x, x); };
  auto vg = fx::value_and_grad(f)(fx::ones({3}));
  (void)vg;
}
