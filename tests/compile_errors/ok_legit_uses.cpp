// expect: compiles
// The valid forms of the code in the other snippets: none of the static_asserts may fire here.
#include <string>

#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

struct Params {
  fx::Tensor w, b;
};
BOOST_HANA_ADAPT_STRUCT(Params, w, b);

struct Config {  // no Tensors: a static argument of jit
  int steps;
  double rate;
  bool operator==(const Config& o) const { return steps == o.steps && rate == o.rate; }
};

int main() {
  fx::Tensor x = fx::ones({3});
  // has_aux with a pair; a pair from vjp's f is a pytree output.
  auto with_aux = [](const fx::Tensor& v) { return std::make_pair(fx::sum(v * v), v); };
  auto [g, aux] = fx::grad(with_aux, fx::has_aux)(x);
  auto [y, pullback] = fx::vjp([](const fx::Tensor& v) { return std::make_pair(v, v * 2.0); }, x);
  auto [y2, pullback2, aux2] = fx::vjp(with_aux, fx::has_aux, x);
  auto [dx2] = pullback2(fx::scalar(1.0));
  // Truth values and numbers read explicitly, and the derivative dropped on purpose.
  if ((fx::sum(x) > 0).item<bool>()) x = x * 2.0;
  auto f = [](const fx::Tensor& v) {
    double scale = fx::stop_gradient(fx::sum(v)).item<double>();
    return (fx::sum(v) > 0).item<bool>() ? fx::sum(v * v) / scale : fx::sum(v);
  };
  fx::Tensor df = fx::grad(f)(x);
  // A registered struct everywhere; a string outside argnums; static numbers and configs.
  auto loss = [](const Params& p, const std::string& name) { return fx::sum(p.w * p.b) * double(name.size()); };
  Params dp = fx::grad(loss)(Params{x, x}, std::string("ab"));
  fx::Tensor dn =
      fx::grad([](const std::string&, const fx::Tensor& v) { return fx::sum(v); }, fx::argnums<1>)(std::string("n"), x);
  fx::Tensor batched = fx::vmap([](const Params& p, double s) { return p.w * s; })(Params{x, x}, 2.0);
  fx::Tensor jitted = fx::jit([](const fx::Tensor& v, const Config& c) { return v * c.rate; })(x, Config{1, 0.5});
  (void)g, (void)aux, (void)y, (void)pullback, (void)y2, (void)aux2, (void)dx2, (void)df, (void)dp, (void)dn,
      (void)batched, (void)jitted;
}
