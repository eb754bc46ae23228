// Optimization switches (runtime/switches.hpp): parsing, and every switch off gives the results of
// every switch on (up to rounding: a switch changes grouping or order, never the arithmetic).
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "fluxion/fluxion.hpp"
#include "runtime/switches.hpp"

namespace fx = fluxion;
using fluxion::runtime::Switch;

namespace {

/// Restores "everything on" when a test case ends, however it ends.
struct AllOnAtExit {
  ~AllOnAtExit() { fx::runtime::set_disabled(""); }
};

fx::Tensor ramp(const std::vector<int64_t>& shape, double scale) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return fx::reshape(fx::sin(fx::astype(fx::arange(n), fx::f64) * scale), shape);
}

double max_abs_difference(const fx::Tensor& a, const fx::Tensor& b) { return fx::max(fx::abs(a - b)).item<double>(); }

}  // namespace

TEST_CASE("switches: names parse, unknown names are an error naming the known ones") {
  AllOnAtExit restore;
  fx::runtime::set_disabled("tiles, gram");
  CHECK_FALSE(fx::runtime::enabled(Switch::tiles));
  CHECK_FALSE(fx::runtime::enabled(Switch::gram));
  CHECK(fx::runtime::enabled(Switch::fusion));
  CHECK(fx::runtime::disabled() == "gram,tiles");
  try {
    fx::runtime::set_disabled("tiles,tilez");
    FAIL("an unknown switch was accepted");
  } catch (const fx::Error& e) {
    const std::string what = e.what();
    CHECK(what.find("[FLUXION_DISABLE] unknown optimization 'tilez'") != std::string::npos);
    CHECK(what.find("side_by_side") != std::string::npos);
  }
  CHECK(fx::runtime::disabled() == "gram,tiles");  // a failed call changes nothing
  fx::runtime::set_disabled("");
  CHECK(fx::runtime::disabled().empty());
  for (int i = 0; i < static_cast<int>(Switch::count); ++i)
    CHECK(fx::runtime::describe_switches().find(fx::runtime::switch_name(static_cast<Switch>(i))) != std::string::npos);
}

TEST_CASE("switches: each optimization off, jitted programs give the results of all on") {
  AllOnAtExit restore;
  // Programs that exercise every switch: products with broadcasts and seeds (jacobians), sibling
  // matrix-vector products, x^T diag(s) x (Hessians of sums of squares), fused chains and row sums,
  // large tiled products read by one reduction, independent products side by side.
  auto mlp = [](const fx::Tensor& w1, const fx::Tensor& w2, const fx::Tensor& x) {
    fx::Tensor h = fx::tanh(fx::matmul(x, w1));
    return fx::sum(fx::exp(-fx::square(fx::matmul(h, w2))));
  };
  auto least_squares = [](const fx::Tensor& p) {
    fx::Tensor r = fx::sin(p * 3.0) - fx::cumsum(p, 0);
    return fx::sum(fx::square(r));
  };
  auto distances = [](const fx::Tensor& a, const fx::Tensor& b) {
    fx::Tensor d = fx::matmul(a, fx::transpose(b));
    return fx::sum(fx::square(d - 0.5), {1});
  };
  const fx::Tensor w1 = ramp({24, 40}, 0.37), w2 = ramp({40, 8}, 0.11), x = ramp({300, 24}, 0.05);
  const fx::Tensor p = ramp({30}, 0.3);
  const fx::Tensor a = ramp({600, 64}, 0.013), b = ramp({900, 64}, 0.017);

  auto run_all = [&] {
    std::vector<fx::Tensor> out;
    auto g = fx::jit(fx::grad(mlp, fx::argnums<0, 1>));
    auto gw = g(w1, w2, x);
    out.push_back(std::get<0>(gw));
    out.push_back(std::get<1>(gw));
    out.push_back(fx::jit(fx::hessian(least_squares))(p));
    out.push_back(fx::jit(fx::jacrev(least_squares))(p));
    out.push_back(fx::jit(distances)(a, b));
    out.push_back(fx::jit(fx::vmap(fx::grad(least_squares)))(fx::stack({p, p * 2.0, p - 1.0})));
    return out;
  };
  const std::vector<fx::Tensor> reference = run_all();
  for (int i = 0; i < static_cast<int>(Switch::count); ++i) {
    const char* name = fx::runtime::switch_name(static_cast<Switch>(i));
    CAPTURE(name);
    fx::runtime::set_disabled(name);  // run_all makes new jit objects: plans compiled afresh
    const std::vector<fx::Tensor> got = run_all();
    REQUIRE(got.size() == reference.size());
    for (size_t k = 0; k < got.size(); ++k) {
      CAPTURE(k);
      CHECK(got[k].shape() == reference[k].shape());
      const double scale = 1.0 + fx::max(fx::abs(reference[k])).item<double>();
      CHECK(max_abs_difference(got[k], reference[k]) <= 1e-12 * scale);
    }
  }
}
