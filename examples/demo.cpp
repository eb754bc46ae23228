// Fluxion demo: tensors, eager numpy-style ops, and the Jaxpr that make_jaxpr stages.
// Build and run: bash scripts/setup.sh   (or: cmake --build build && build/examples/demo)
#include <fluxion/fluxion.hpp>

#include <iostream>

namespace fx = fluxion;

// Parameters of a small network, held in a plain struct: a pytree through Boost.Hana.
struct Mlp {
  fx::Tensor w1, b1, w2, b2;
};
BOOST_HANA_ADAPT_STRUCT(Mlp, w1, b1, w2, b2);

fx::Tensor forward(const Mlp& p, const fx::Tensor& x) {
  return fx::matmul(fx::tanh(fx::matmul(x, p.w1) + p.b1), p.w2) + p.b2;
}

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
  auto f = [](const fx::Tensor& x, const fx::Tensor& w) { return fx::sum(fx::tanh(fx::matmul(x, w)) * 2.0); };
  fx::Tensor x = fx::ones({4, 8}, fx::f32);
  fx::Tensor w = fx::full({8, 2}, 0.1, fx::f32);
  std::cout << "f(x, w) = sum(tanh(matmul(x, w)) * 2.0) = " << f(x, w) << "\n";
  std::cout << "make_jaxpr(f)(x, w) =\n" << fx::make_jaxpr(f)(x, w) << "\n\n";

  // Transforms compose: gradients, forward mode, batching, Hessians.
  auto g = [](const fx::Tensor& v) { return fx::sum(fx::sin(v) * v); };
  std::cout << "grad(sum(sin(v) * v))(a)   = " << fx::grad(g)(a) << "\n";
  std::cout << "grad(grad(sin))(0.5)       = "
            << fx::grad(fx::grad([](const fx::Tensor& v) { return fx::sin(v); }))(fx::scalar(0.5)) << "\n";
  std::cout << "jvp(sin, a, ones)          = "
            << fx::jvp([](const fx::Tensor& v) { return fx::sin(v); }, a, fx::ones({3})).second << "\n";
  std::cout << "vmap(dot with w)(rows)     = "
            << fx::vmap([&](const fx::Tensor& r) { return fx::sum(r * a); })(fx::reshape(fx::arange(6), {2, 3}))
            << "\n";
  std::cout << "hessian(sum(v^3))(a)       =\n"
            << fx::hessian([](const fx::Tensor& v) { return fx::sum(v * v * v); })(a) << "\n\n";

  // The Hessian of an MLP's loss with respect to its parameters, held in a struct.
  Mlp params{fx::reshape(fx::linspace(-0.5, 0.5, 6), {3, 2}), fx::zeros({2}),
             fx::reshape(fx::linspace(0.2, 0.8, 2), {2, 1}), fx::zeros({1})};
  fx::Tensor xs = fx::reshape(fx::linspace(-1.0, 1.0, 12), {4, 3});
  fx::Tensor ys = fx::reshape(fx::tensor({0.5, -0.25, 1.0, 0.0}), {4, 1});
  auto loss = [&](const Mlp& p) {
    fx::Tensor err = forward(p, xs) - ys;
    return fx::mean(err * err);
  };
  std::vector<Mlp> H = fx::hessian(loss)(params);
  std::cout << "MLP loss = " << loss(params) << "; Hessian blocks d2L/dw1 dw1 " << H[0].w1.aval() << ", d2L/dw1 db2 "
            << H[0].b2.aval() << "\n";
  // Per-sample gradients: vmap over examples of the gradient of a one-example loss.
  auto example_loss = [](const Mlp& p, const fx::Tensor& x, const fx::Tensor& y) {
    fx::Tensor err = forward(p, fx::expand_dims(x, 0)) - y;
    return fx::sum(err * err);
  };
  Mlp per_sample = fx::vmap(fx::grad(example_loss), fx::in_axes(fx::none, 0, 0))(params, xs, ys);
  std::cout << "per-sample gradients of w1: " << per_sample.w1.aval() << "\n\n";

  std::cout << "CUDA available: " << (fx::cuda::is_available() ? "yes" : "no");
  if (!fx::cuda::is_available()) std::cout << " (" << fx::cuda::unavailable_reason() << ")";
  std::cout << "\n";
  return 0;
}
