// The planning switches (runtime/switches.hpp) change the plan they name: fusion, tiles,
// buffer_reuse, register_programs and side_by_side each off give a plan without it (their results
// against all on: test_switches.cpp).
#include <doctest/doctest.h>

#include <string>

#include "fluxion/fluxion.hpp"
#include "samples.hpp"
#include "runtime/executable.hpp"
#include "runtime/switches.hpp"

namespace fx = fluxion;
using fluxion::testing::random_tensor;

namespace {

struct AllOnAtExit {
  ~AllOnAtExit() { fx::runtime::set_disabled(""); }
};

}  // namespace

TEST_CASE("plan switches: each planning optimization off leaves it out of the plan") {
  AllOnAtExit restore;
  auto chain = [](const fx::Tensor& x) { return fx::sum(fx::tanh(x) * x + fx::exp(-(x * x))); };
  auto distances = [](const fx::Tensor& a, const fx::Tensor& b) {
    return fx::sum(fx::square(fx::matmul(a, fx::transpose(b)) - 0.5), {1});
  };
  const fx::Tensor x = random_tensor({5000}, fx::f64, 1);
  const fx::Tensor a = random_tensor({600, 64}, fx::f64, 2), b = random_tensor({900, 64}, fx::f64, 3);
  const fx::Jaxpr chain_j = fx::make_jaxpr(fx::grad(chain))(x);
  const fx::Jaxpr distances_j = fx::make_jaxpr(distances)(a, b);
  auto plan = [](const fx::Jaxpr& j) { return fx::compile_jaxpr(j, fx::Device::cpu())->describe(); };

  const std::string chain_on = plan(chain_j), distances_on = plan(distances_j);
  CHECK_MESSAGE(chain_on.find("0 kernels, 1 fused groups") != std::string::npos, chain_on);
  CHECK_MESSAGE(chain_on.find("register program") != std::string::npos, chain_on);
  CHECK_MESSAGE(distances_on.find(" tiles]") != std::string::npos, distances_on);

  fx::runtime::set_disabled("fusion");
  const std::string unfused = plan(chain_j);
  CHECK_MESSAGE(unfused.find(" 0 fused groups") != std::string::npos, unfused);
  fx::runtime::set_disabled("register_programs");
  const std::string blocks = plan(chain_j);
  CHECK_MESSAGE(blocks.find("1 fused groups") != std::string::npos, blocks);
  CHECK_MESSAGE(blocks.find("register program") == std::string::npos, blocks);
  fx::runtime::set_disabled("tiles");
  const std::string whole = plan(distances_j);
  CHECK_MESSAGE(whole.find(" tiles]") == std::string::npos, whole);
  CHECK_MESSAGE(whole.find("dot_general") != std::string::npos, whole);

  // Buffer reuse: with it off every intermediate has its own buffer, so a call needs more bytes.
  auto deep = [](const fx::Tensor& m) {
    fx::Tensor h = m;
    for (int i = 0; i < 4; ++i) h = fx::tanh(fx::matmul(h, m));
    return fx::sum(h);
  };
  const fx::Tensor m = random_tensor({64, 64}, fx::f64, 4);
  const fx::Jaxpr deep_j = fx::make_jaxpr(fx::grad(deep))(m);
  fx::runtime::set_disabled("");
  const int64_t shared = fx::compile_jaxpr(deep_j, fx::Device::cpu())->intermediate_bytes();
  fx::runtime::set_disabled("buffer_reuse");
  const int64_t separate = fx::compile_jaxpr(deep_j, fx::Device::cpu())->intermediate_bytes();
  CHECK(separate > shared);
}
