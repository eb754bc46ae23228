// Fluxion demo: tensors, eager numpy-style ops, and the Jaxpr that make_jaxpr stages.
// Build and run: bash scripts/setup.sh   (or: cmake --build build && build/examples/demo)
#include <fluxion/fluxion.hpp>

#include <iostream>

namespace fx = fluxion;

int main() {
  // Tensors: f64 by default, f32 when given floats; printed like numpy.
  fx::Tensor a = fx::tensor({1.0, 2.0, 3.0});
  fx::Tensor b = fx::tensor({{1.f, 2.f}, {3.f, 4.f}});
  std::cout << "a = " << a << "   (" << a.aval() << ")\n";
  std::cout << "b =\n" << b << "   (" << b.aval() << ")\n\n";

  // Eager ops run now, with broadcasting and JAX's dtype promotion.
  std::cout << "a + 1       = " << a + 1.0 << "\n";
  std::cout << "a * a       = " << a * a << "\n";
  std::cout << "sin(a)      = " << fx::sin(a) << "\n";
  std::cout << "sum(a)      = " << fx::sum(a) << "\n";
  std::cout << "b * 2.0     = " << (b * 2.0).aval() << " (a C++ double is weakly typed)\n";
  std::cout << "matmul(b,b) =\n" << fx::matmul(b, b) << "\n\n";

  // make_jaxpr traces a function on abstract values and prints the program it staged.
  auto f = [](const fx::Tensor& x, const fx::Tensor& w) {
    return fx::sum(fx::tanh(fx::matmul(x, w)) * 2.0);
  };
  fx::Tensor x = fx::ones({4, 8}, fx::f32);
  fx::Tensor w = fx::full({8, 2}, 0.1, fx::f32);
  std::cout << "f(x, w) = sum(tanh(matmul(x, w)) * 2.0) = " << f(x, w) << "\n";
  std::cout << "make_jaxpr(f)(x, w) =\n" << fx::make_jaxpr(f)(x, w) << "\n\n";

  std::cout << "CUDA available: " << (fx::cuda::is_available() ? "yes" : "no");
  if (!fx::cuda::is_available()) std::cout << " (" << fx::cuda::unavailable_reason() << ")";
  std::cout << "\n";
  return 0;
}
