// The run-time dispatched CPU kernels (backends/cpu/isa.hpp): every instruction-set variant this
// machine supports gives the baseline variant's bits for fused groups run as register programs
// (with and without multiply-add polynomials: exp, log, tanh) and for eager elementwise kernels, on
// sizes below, at and past whole tiles, and the groups' sums within the error bound of summation
// (more lanes add in another order); FLUXION_ISA's names; a variant the CPU lacks is a DeviceError.
// A native build holds the baseline variant only, and the cases check that.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "backends/cpu/isa.hpp"
#include "runtime/executable.hpp"
#include "samples.hpp"

namespace fx = fluxion;
namespace cpu = fluxion::cpu;
using fluxion::testing::random_tensor;

namespace {

/// Restores the variant chosen before the test.
struct IsaGuard {
  cpu::Isa saved = cpu::active_isa();
  ~IsaGuard() { cpu::set_isa(saved); }
};

/// "" when `got` and `want` have equal bits everywhere (or NaN on both sides), else the first difference.
std::string bit_difference(const fx::Tensor& got, const fx::Tensor& want) {
  if (got.aval() != want.aval()) return "avals differ";
  const size_t width = static_cast<size_t>(fx::dtype_size(got.dtype()));
  const auto* pg = static_cast<const unsigned char*>(got.array().data());
  const auto* pw = static_cast<const unsigned char*>(want.array().data());
  const std::vector<double> gv = got.to_vector<double>(), wv = want.to_vector<double>();
  for (size_t i = 0; i < gv.size(); ++i) {
    if (std::memcmp(pg + i * width, pw + i * width, width) == 0 || (std::isnan(gv[i]) && std::isnan(wv[i]))) continue;
    std::ostringstream os;
    os.precision(17);
    os << "element " << i << " of " << gv.size() << ": " << gv[i] << " against the baseline's " << wv[i];
    return os.str();
  }
  return "";
}

/// The variants this machine runs, narrowest first.
std::vector<cpu::Isa> runnable_isas() {
  std::vector<cpu::Isa> out;
  for (cpu::Isa isa : {cpu::Isa::baseline, cpu::Isa::avx2, cpu::Isa::avx512}) {
    if (static_cast<int>(isa) <= static_cast<int>(cpu::supported_isa())) out.push_back(isa);
  }
  return out;
}

}  // namespace

TEST_CASE("isa: FLUXION_ISA's names, and a variant wider than the CPU's is a DeviceError") {
  for (cpu::Isa isa : {cpu::Isa::baseline, cpu::Isa::avx2, cpu::Isa::avx512}) {
    CHECK(cpu::parse_isa(cpu::isa_name(isa)) == isa);
  }
  CHECK_THROWS_WITH_AS(cpu::parse_isa("sse9"), doctest::Contains("baseline, avx2 or avx512"), fx::Error);
  IsaGuard guard;
  for (cpu::Isa isa : runnable_isas()) {
    cpu::set_isa(isa);
    CHECK(cpu::active_isa() == isa);
  }
  if (cpu::supported_isa() != cpu::Isa::avx512) {
    CHECK_THROWS_WITH_AS(cpu::set_isa(cpu::Isa::avx512), doctest::Contains("cannot run here"), fx::DeviceError);
    CHECK(cpu::active_isa() != cpu::Isa::avx512);  // unchanged
  }
  const std::string note = std::string("this machine runs the ") + cpu::isa_name(cpu::supported_isa()) + " variant";
  MESSAGE(note);
}

TEST_CASE("isa: every variant gives the baseline's bits for register programs, sums within the bound") {
  IsaGuard guard;
  // With multiply-add polynomials (exp, log, tanh: the AVX2 variant runs them where AVX-512 is
  // active) and without (the AVX-512 variant), each with a sum, on special values too.
  auto polynomials = [](const fx::Tensor& x, const fx::Tensor& y) {
    fx::Tensor u = fx::tanh(x) * y + fx::exp(-(x * x)) - fx::log(y * y + 0.5) / fx::sqrt(y * y + 2.0);
    return std::make_tuple(u, fx::sum(u));
  };
  auto arithmetic = [](const fx::Tensor& x, const fx::Tensor& y) {
    fx::Tensor u = (x * y - y) / (x * x + 2.0) - fx::sqrt(y * y + 1.0) * (-(x * y));
    return std::make_tuple(u, fx::sum(u));
  };
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    for (int64_t n : {int64_t(16), int64_t(100), int64_t(1024), int64_t(5003), int64_t(70001)}) {
      CAPTURE(dtype);
      CAPTURE(n);
      fx::Tensor x = random_tensor({n}, dtype, 51), y = random_tensor({n}, dtype, 52);
      if (n >= 100) {
        // Special values at the front (whole tiles): ±0, ±inf, NaN, a subnormal, values near overflow.
        std::vector<double> xs = x.to_vector<double>();
        const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-310, 88.5, -100.0, 700.0, 3e38};
        for (size_t i = 0; i < std::size(specials); ++i) xs[i * 7] = specials[i];
        x = fx::lax::convert_element_type(fx::from_vector(xs), dtype);
      }
      for (bool madd : {true, false}) {
        CAPTURE(madd);
        auto run = [&](cpu::Isa isa) {
          cpu::set_isa(isa);
          return madd ? fx::jit(polynomials)(x, y) : fx::jit(arithmetic)(x, y);
        };
        if (n == 1024) {
          const std::string plan =
              fx::compile_jaxpr(madd ? fx::make_jaxpr(polynomials)(x, y) : fx::make_jaxpr(arithmetic)(x, y),
                                fx::Device::cpu())
                  ->describe();
          CHECK_MESSAGE(plan.find("register program") != std::string::npos, plan);
        }
        const auto want = run(cpu::Isa::baseline);
        const std::vector<double> terms = std::get<0>(want).to_vector<double>();
        double magnitude = 0;
        for (double t : terms) magnitude += std::isfinite(t) ? std::abs(t) : 0.0;
        const double eps =
            dtype == fx::f32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
        for (cpu::Isa isa : runnable_isas()) {
          CAPTURE(cpu::isa_name(isa));
          const auto got = run(isa);
          CHECK_MESSAGE(bit_difference(std::get<0>(got), std::get<0>(want)) == "",
                        bit_difference(std::get<0>(got), std::get<0>(want)));
          const double a = std::get<1>(got).item<double>(), b = std::get<1>(want).item<double>();
          if (!std::isfinite(b)) {
            CHECK((a == b || (std::isnan(a) && std::isnan(b))));
          } else {
            CHECK(std::abs(a - b) <= 2.0 * static_cast<double>(n) * eps * magnitude);
          }
        }
      }
    }
  }
}

TEST_CASE("isa: eager elementwise kernels give the baseline's bits in every variant") {
  // Eager ops whose primitive has a register-program operation run their whole tiles in the
  // variant (backends/cpu/elementwise.hpp), the rest in the baseline kernel: below the size that
  // takes the variant, at it, and past it with a tail; rank-0 operands on either side.
  IsaGuard guard;
  for (fx::DType dtype : {fx::f32, fx::f64}) {
    for (int64_t n : {int64_t(1000), int64_t(1024), int64_t(5003), int64_t(70001)}) {
      CAPTURE(dtype);
      CAPTURE(n);
      std::vector<double> xs = random_tensor({n}, fx::f64, 61).to_vector<double>();
      const double specials[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-310, 88.5, -100.0, 700.0, 3e38};
      for (size_t i = 0; i < std::size(specials); ++i) xs[i * 5] = specials[i];
      const fx::Tensor x = fx::lax::convert_element_type(fx::from_vector(xs), dtype);
      const fx::Tensor y = random_tensor({n}, dtype, 62), s = fx::full({}, 1.75, dtype);
      auto all_ops = [&] {
        return std::vector<fx::Tensor>{fx::exp(x), fx::log(x), fx::tanh(x), fx::sqrt(x), -x,    x + y,
                                       x - y,      x * y,      x / y,       s - x,       x / s, s * y};
      };
      cpu::set_isa(cpu::Isa::baseline);
      const std::vector<fx::Tensor> want = all_ops();
      for (cpu::Isa isa : runnable_isas()) {
        CAPTURE(cpu::isa_name(isa));
        cpu::set_isa(isa);
        const std::vector<fx::Tensor> got = all_ops();
        for (size_t k = 0; k < got.size(); ++k) {
          CAPTURE(k);
          CHECK_MESSAGE(bit_difference(got[k], want[k]) == "", bit_difference(got[k], want[k]));
        }
      }
    }
  }
}
