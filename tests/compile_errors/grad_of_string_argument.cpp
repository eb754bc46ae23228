// expect: an argument selected by fx::argnums (default 0) is not a Tensor or a pytree of Tensors
// Differentiating with respect to a std::string (argnums defaults to the first argument).
#include <string>

#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

int main() {
  auto f = [](const std::string& name, const fx::Tensor& x) { return fx::sum(x) * double(name.size()); };
  auto g = fx::grad(f)(std::string("w"), fx::ones({3}));
  (void)g;
}
