// expect: f returns a std::pair or std::tuple: for a loss with auxiliary outputs write fx::grad(f, fx::has_aux)
// Forgetting fx::has_aux: f returns {loss, aux}.
#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

int main() {
  auto f = [](const fx::Tensor& x) { return std::make_pair(fx::sum(x * x), x); };
  auto g = fx::grad(f)(fx::ones({3}));
  (void)g;
}
