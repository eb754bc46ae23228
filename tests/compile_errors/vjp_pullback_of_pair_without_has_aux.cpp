// expect: If f returns std::pair{output, aux}, write fx::vjp(f, fx::has_aux, args...)
// f returns {output, aux} but vjp was not told: the pullback then wants a cotangent for both.
#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

int main() {
  auto f = [](const fx::Tensor& x) { return std::make_pair(x * x, fx::sum(x)); };
  auto [y, pullback] = fx::vjp(f, fx::ones({3}));
  auto [dx] = pullback(fx::ones({3}));
  (void)y, (void)dx;
}
