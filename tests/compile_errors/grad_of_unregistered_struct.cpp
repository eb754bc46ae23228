// expect: an argument selected by fx::argnums (default 0) is not a Tensor or a pytree of Tensors
// A parameter struct that was never registered with BOOST_HANA_ADAPT_STRUCT.
#include "fluxion/fluxion.hpp"
namespace fx = fluxion;

struct Params {
  fx::Tensor w, b;
};

int main() {
  auto loss = [](const Params& p) { return fx::sum(p.w * p.b); };
  auto g = fx::grad(loss)(Params{fx::ones({3}), fx::ones({3})});
  (void)g;
}
