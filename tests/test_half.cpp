// f16 and bf16: conversions checked against exact references (every f16 bit pattern, a sample of bf16
// ones), JAX's promotion table, arithmetic computed in f32 and rounded once (eager, jit with and without
// the widen_half pass, vmap, grad), and the registry samples and their gradients run on half inputs.
// Loss scaling: test_amp.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "fluxion/display.hpp"
#include "fluxion/fluxion.hpp"
#include "runtime/executable.hpp"
#include "runtime/switches.hpp"
#include "samples.hpp"

namespace fx = fluxion;

namespace {

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
float bits_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

/// The exact value of a finite binary16 pattern from its fields (exponent 31 read as a normal exponent: 0x7c00
/// is then 2^16, the "next value" after 65504 that round to nearest even overflows to).
double f16_value(uint32_t h) {
  const uint32_t e = (h >> 10) & 31, m = h & 1023;
  const double mag = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(double(1024 + m), int(e) - 25);
  return (h & 0x8000) ? -mag : mag;
}
/// The same for bfloat16 (8 exponent bits, 7 mantissa bits, bias 127).
double bf16_value(uint32_t h) {
  const uint32_t e = (h >> 7) & 255, m = h & 127;
  const double mag = e == 0 ? std::ldexp(double(m), -133) : std::ldexp(double(128 + m), int(e) - 134);
  return (h & 0x8000) ? -mag : mag;
}

/// Elementwise comparison of two tensors of any dtype through f64: NaN equals NaN, infinities equal, finite
/// values within atol + rtol * |want|. Returns "" or the first mismatch.
std::string close(const fx::Tensor& got, const fx::Tensor& want, double rtol, double atol) {
  if (got.shape() != want.shape()) return "shapes differ";
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (std::isinf(w[i]) && g[i] == w[i]) continue;
    if (!(std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]))) {
      std::ostringstream os;
      os << "at flat index " << i << ": got " << g[i] << ", want " << w[i];
      return os.str();
    }
  }
  return "";
}

/// Bitwise equality of two tensors of the same dtype (NaNs with equal bits equal).
bool same_bits(const fx::Tensor& a, const fx::Tensor& b) {
  if (a.aval() != b.aval()) return false;
  const fx::Tensor x = a.device().is_cpu() ? a : fx::device_put(a, fx::Device::cpu());
  const fx::Tensor y = b.device().is_cpu() ? b : fx::device_put(b, fx::Device::cpu());
  const auto n = static_cast<size_t>(x.size() * fx::dtype_size(x.dtype()));
  return n == 0 || std::memcmp(x.array().data(), y.array().data(), n) == 0;  // empty: no data pointers
}

/// 1 + the largest finite |element| of `t` (a scale for absolute tolerances; NaN and Inf compare as such).
double largest_finite(const fx::Tensor& t) {
  double scale = 1;
  if (fx::is_floating(t.dtype()))
    for (double v : t.to_vector<double>())
      if (std::isfinite(v)) scale = std::max(scale, 1 + std::fabs(v));
  return scale;
}

/// Element `i` of `t` along axis 0.
fx::Tensor row_of(const fx::Tensor& t, int64_t i) {
  std::vector<int64_t> start(static_cast<size_t>(t.ndim()), 0), limit = t.shape().dims();
  start[0] = i;
  limit[0] = i + 1;
  return fx::reshape(fx::slice(t, start, limit), std::vector<int64_t>(limit.begin() + 1, limit.end()));
}

}  // namespace

// ---- conversions ----

TEST_CASE("half: every f16 bit pattern converts to its exact float value") {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = fx::float16_t::from_bits(static_cast<uint16_t>(h)).to_float();
    const uint32_t e = (h >> 10) & 31, m = h & 1023;
    CAPTURE(h);
    if (e == 31 && m != 0) {
      REQUIRE(std::isnan(f));
      CHECK(std::signbit(f) == bool(h & 0x8000));
    } else if (e == 31) {
      REQUIRE(f == ((h & 0x8000) ? -INFINITY : INFINITY));
    } else {
      REQUIRE(double(f) == f16_value(h));
      CHECK(std::signbit(f) == bool(h & 0x8000));  // -0 stays -0
    }
  }
}

TEST_CASE("half: float -> f16 rounds to nearest, ties to even, for every f16 value and every midpoint") {
  int64_t checks = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t e = (h >> 10) & 31;
    if (e == 31) continue;  // Inf and NaN: below
    CAPTURE(h);
    const double v = f16_value(h);
    // The value itself, from float and from double.
    REQUIRE(fx::float16_t(float(v)).bits == h);
    REQUIRE(fx::float16_t(v).bits == h);
    // The midpoint to the next magnitude (exact in float: 12 significant bits) goes to the even neighbour.
    const uint32_t next = h + 1;  // same sign, next magnitude; 0x7bff + 1 is Inf
    const double mid = (v + f16_value(next)) / 2;
    const uint32_t even = (h & 1) == 0 ? h : next;
    REQUIRE(fx::float16_t(float(mid)).bits == even);
    REQUIRE(fx::float16_t(mid).bits == even);
    // One float ulp either side of the midpoint rounds to the nearer neighbour.
    const float toward = std::nextafter(float(mid), float(v)), away = std::nextafter(float(mid), float(2 * mid - v));
    REQUIRE(fx::float16_t(toward).bits == h);
    REQUIRE(fx::float16_t(away).bits == next);
    // Double precision just past the midpoint: one rounding, not two (through f32 this would be the tie).
    const double past = mid + (mid - v) * 0x1p-30;
    if (mid != 0) REQUIRE(fx::float16_t(past).bits == next);
    checks += 7;
  }
  CHECK(checks > 400000);
}

TEST_CASE("half: f16 keeps infinities, quiets NaNs and overflows to infinity") {
  CHECK(fx::float16_t(INFINITY).bits == 0x7c00);
  CHECK(fx::float16_t(-INFINITY).bits == 0xfc00);
  CHECK(fx::float16_t(65504.0f).bits == 0x7bff);
  CHECK(fx::float16_t(65519.99f).bits == 0x7bff);
  CHECK(fx::float16_t(65520.0f).bits == 0x7c00);  // the tie above the largest finite value overflows
  CHECK(fx::float16_t(1e10).bits == 0x7c00);
  CHECK(fx::float16_t(-1e300).bits == 0xfc00);
  CHECK(fx::float16_t(1e-300).bits == 0x0000);  // underflow keeps the sign
  CHECK(fx::float16_t(-1e-300).bits == 0x8000);
  CHECK(fx::float16_t(0x1p-25).bits == 0x0000);              // half the smallest subnormal: tie to even (zero)
  CHECK(fx::float16_t(0x1p-25 * 1.0000001).bits == 0x0001);  // just above it
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffc00001u, 0x7fbfffffu}) {
    const fx::float16_t h(bits_float(nan));
    CAPTURE(nan);
    CHECK((h.bits & 0x7c00) == 0x7c00);
    CHECK((h.bits & 0x0200) != 0);  // quiet
    CHECK(bool(h.bits & 0x8000) == bool(nan >> 31));
    CHECK(std::isnan(h.to_float()));
  }
  CHECK(std::isnan(fx::float16_t(std::numeric_limits<double>::signaling_NaN()).to_float()));
}

TEST_CASE("half: bf16 converts exactly for every exponent, rounds ties to even, keeps Inf and NaN") {
  int64_t checks = 0;
  for (uint32_t sign : {0u, 0x8000u})
    for (uint32_t e = 0; e < 255; ++e)
      for (uint32_t m : {0u, 1u, 2u, 63u, 64u, 85u, 126u, 127u}) {
        const uint32_t h = sign | (e << 7) | m;
        CAPTURE(h);
        const double v = bf16_value(h);
        const float f = fx::bfloat16_t::from_bits(static_cast<uint16_t>(h)).to_float();
        REQUIRE(double(f) == v);
        REQUIRE(float_bits(f) == h << 16);
        REQUIRE(fx::bfloat16_t(f).bits == h);
        REQUIRE(fx::bfloat16_t(v).bits == h);
        const uint32_t next = h + 1;
        const double mid = (v + bf16_value(next)) / 2;  // exact in float: 9 significant bits
        REQUIRE(fx::bfloat16_t(float(mid)).bits == ((h & 1) == 0 ? h : next));
        REQUIRE(fx::bfloat16_t(std::nextafter(float(mid), float(v))).bits == h);
        REQUIRE(fx::bfloat16_t(std::nextafter(float(mid), float(2 * mid - v))).bits == next);
        checks += 6;
      }
  CHECK(checks > 20000);
  CHECK(fx::bfloat16_t(INFINITY).bits == 0x7f80);
  CHECK(fx::bfloat16_t(-INFINITY).bits == 0xff80);
  CHECK(fx::bfloat16_t(std::numeric_limits<float>::max()).bits == 0x7f80);  // rounds past the largest bf16
  CHECK(fx::bfloat16_t(3.3895313892515355e38).bits == 0x7f7f);              // the largest bf16
  const fx::bfloat16_t nan(bits_float(0x7f800001u));                        // signalling: quieted, still NaN
  CHECK((nan.bits & 0x7fc0) == 0x7fc0);
  CHECK(std::isnan(nan.to_float()));
  CHECK(std::isinf(fx::bfloat16_t::from_bits(0x7f80).to_float()));
}

TEST_CASE("half: convert_element_type kernels agree with the scalar conversions on every backend") {
  // Every f16 value, every midpoint and the specials, as f32 and f64 tensors.
  std::vector<float> values;
  for (uint32_t h = 0; h < 65536; ++h) {
    values.push_back(fx::float16_t::from_bits(static_cast<uint16_t>(h)).to_float());
    if (((h >> 10) & 31) < 31) values.push_back(float((f16_value(h) + f16_value(h + 1)) / 2));
  }
  const fx::Tensor x32 = fx::from_vector(values);
  const fx::Tensor x64 = fx::astype(x32, fx::f64);
  const auto& convert = *fx::find_primitive("convert_element_type");
  for (fx::Backend b : {fx::Backend::cpu, fx::Backend::reference, fx::Backend::cuda_emulated}) {
    CAPTURE(fx::backend_name(b));
    for (fx::DType to : {fx::f16, fx::bf16}) {
      CAPTURE(to);
      fx::Jaxpr j = fx::make_jaxpr([&](const fx::Tensor& t) { return fx::astype(t, to); })(x32);
      const fx::Params& params = *j.equations[0].params;
      for (const fx::Tensor& x : {x32, x64}) {
        const fx::Tensor h = fx::eval_primitive(convert, {x}, params, b)[0];
        REQUIRE(h.dtype() == to);
        const std::vector<double> src = x.to_vector<double>();
        const auto* bits = static_cast<const uint16_t*>(h.array().data());
        for (size_t i = 0; i < src.size(); ++i) {
          const uint16_t want = to == fx::f16 ? fx::float16_t(src[i]).bits : fx::bfloat16_t(src[i]).bits;
          if (bits[i] != want) FAIL_CHECK("element " << i << " (" << src[i] << "): " << bits[i] << " != " << want);
        }
        // Back to f32 and f64: exact.
        fx::Jaxpr back = fx::make_jaxpr([&](const fx::Tensor& t) { return fx::astype(t, x.dtype()); })(h);
        const fx::Tensor w = fx::eval_primitive(convert, {h}, *back.equations[0].params, b)[0];
        CHECK(close(w, fx::astype(h, x.dtype()), 0, 0).empty());
      }
      // Integers and bool, both ways (float -> int saturates, NaN -> 0, as for f32).
      const fx::Tensor ints = fx::tensor<int32_t>({-70000, -2049, -3, 0, 5, 2049, 70000});
      const fx::Tensor hi = fx::astype(ints, to);
      CHECK(close(hi, fx::astype(fx::astype(ints, fx::f64), to), 0, 0).empty());
      const fx::Tensor back = fx::astype(fx::astype(fx::tensor<float>({NAN, -INFINITY, 2.5f, 1e9f}), to), fx::i32);
      CHECK(back.to_vector<int32_t>() ==
            std::vector<int32_t>{0, std::numeric_limits<int32_t>::min(), 2,
                                 to == fx::f16 ? std::numeric_limits<int32_t>::max() : 998244352});
      CHECK(fx::astype(fx::astype(fx::tensor<bool>({true, false}), to), fx::boolean).to_vector<bool>() ==
            std::vector<bool>{true, false});
    }
  }
}

// ---- dtypes and promotion ----

TEST_CASE("half: names, sizes, sets and JAX's promotion lattice") {
  CHECK(std::string(fx::dtype_name(fx::f16)) == "f16");
  CHECK(std::string(fx::dtype_name(fx::bf16)) == "bf16");
  CHECK(fx::dtype_size(fx::f16) == 2);
  CHECK(fx::dtype_size(fx::bf16) == 2);
  CHECK(static_cast<int>(fx::f16) == 5);  // codes are stable: files and hashes use them
  CHECK(static_cast<int>(fx::bf16) == 6);
  CHECK(fx::is_floating(fx::f16));
  CHECK(fx::is_floating(fx::bf16));
  CHECK(fx::kFloating.contains(fx::bf16));
  CHECK(fx::kNumeric.contains(fx::f16));
  CHECK(!fx::kInteger.contains(fx::f16));
  CHECK(fx::kFloating.describe() == "f32, f64, f16, bf16");
  using fx::DType;
  const DType b = fx::boolean, i = fx::i32, l = fx::i64, s = fx::f32, d = fx::f64, h = fx::f16, z = fx::bf16;
  // JAX's jnp.promote_types on these types (x64 mode for i64/f64).
  const DType order[7] = {b, i, l, h, z, s, d};
  const DType table[7][7] = {
      {b, i, l, h, z, s, d},  // bool
      {i, i, l, h, z, s, d},  // i32
      {l, l, l, h, z, s, d},  // i64
      {h, h, h, h, s, s, d},  // f16
      {z, z, z, s, z, s, d},  // bf16
      {s, s, s, s, s, s, d},  // f32
      {d, d, d, d, d, d, d},  // f64
  };
  for (int r = 0; r < 7; ++r)
    for (int c = 0; c < 7; ++c) {
      CAPTURE(order[r]);
      CAPTURE(order[c]);
      CHECK(fx::promote_types(order[r], order[c]) == table[r][c]);
    }
  // The op layer promotes with it, weak scalars keep the half dtype.
  const fx::Tensor x = fx::astype(fx::tensor<float>({1, 2}), fx::f16);
  CHECK((x + fx::tensor<int32_t>({1, 1})).dtype() == fx::f16);
  CHECK((x + fx::astype(fx::tensor<float>({1, 1}), fx::bf16)).dtype() == fx::f32);
  CHECK((x * 2.0).dtype() == fx::f16);
  CHECK((x + fx::tensor<double>({1, 1})).dtype() == fx::f64);
}

TEST_CASE("half: creation, reading, printing and errors") {
  const fx::Tensor z = fx::zeros(fx::Shape{2, 2}, fx::bf16);
  CHECK(z.dtype() == fx::bf16);
  CHECK(fx::full(fx::Shape{3}, 0.1, fx::f16).to_vector<float>() ==
        std::vector<float>(3, fx::float16_t(0.1).to_float()));
  CHECK(fx::eye(2, fx::f16).to_vector<double>() == std::vector<double>{1, 0, 0, 1});
  CHECK(fx::arange(4, fx::bf16).to_vector<int>() == std::vector<int>{0, 1, 2, 3});
  CHECK(fx::linspace(0, 1, 3, fx::f16).to_vector<double>() == std::vector<double>{0, 0.5, 1});
  CHECK(fx::scalar(fx::float16_t(1.5)).item<double>() == 1.5);
  CHECK(fx::from_vector(std::vector<fx::bfloat16_t>{fx::bfloat16_t(3.0)}).dtype() == fx::bf16);
  std::ostringstream os;
  os << fx::astype(fx::tensor<float>({0.1f, 2}), fx::f16);
  CHECK(os.str() == "[0.09997559 2.        ]");
  CHECK(fx::display::to_html(fx::astype(fx::tensor<float>({0.5f}), fx::bf16))
            .find("<td style=\"white-space: nowrap\">0.5</td>") != std::string::npos);
  // A finite value the dtype cannot hold is an error, as for f32.
  CHECK_THROWS_AS(fx::full(fx::Shape{}, 1e5, fx::f16), fx::DTypeError);
  CHECK_NOTHROW(fx::full(fx::Shape{}, 1e30, fx::bf16));
  CHECK_NOTHROW(fx::full(fx::Shape{}, INFINITY, fx::f16));
  // Jaxprs print half literals and avals by name.
  const fx::Tensor x = fx::astype(fx::tensor<float>({1, 2}), fx::bf16);
  std::ostringstream jp;
  jp << fx::make_jaxpr([](const fx::Tensor& t) { return t * 0.5; })(x);
  CHECK(jp.str().find("bf16[2]") != std::string::npos);
  CHECK(jp.str().find("0.5:bf16[]") != std::string::npos);
  // Random samples in half dtypes are f32 samples rounded.
  const fx::random::Key key = fx::random::key(3);
  CHECK(fx::random::normal(key, fx::Shape{4}, fx::f16).dtype() == fx::f16);
  CHECK(close(fx::random::uniform(key, fx::Shape{8}, fx::bf16),
              fx::astype(fx::random::uniform(key, fx::Shape{8}, fx::f32), fx::bf16), 0, 0)
            .empty());
}

// ---- arithmetic in f32 ----

TEST_CASE("half: elementwise results are the f32 results rounded once, eagerly and under jit") {
  const fx::Tensor x32 = fx::testing::random_tensor(fx::Shape{257}, fx::f32, 7, -3, 3);
  const fx::Tensor y32 = fx::testing::random_tensor(fx::Shape{257}, fx::f32, 8, 0.5, 3);
  auto f = [](const fx::Tensor& a, const fx::Tensor& b) { return fx::tanh(a) * fx::exp(a / b) + fx::sqrt(b) - 1.0; };
  for (fx::DType h : {fx::f16, fx::bf16}) {
    CAPTURE(h);
    const fx::Tensor x = fx::astype(x32, h), y = fx::astype(y32, h);
    // Each op rounds: the same chain written with explicit f32 math and a rounding after every op.
    auto r = [&](const fx::Tensor& t) { return fx::astype(fx::astype(t, h), fx::f32); };
    const fx::Tensor xa = r(x), ya = r(y);
    const fx::Tensor want = fx::astype(r(r(r(fx::tanh(xa)) * r(fx::exp(r(xa / ya)))) + r(fx::sqrt(ya))) - 1.0, h);
    const fx::Tensor eager = f(x, y);
    REQUIRE(eager.dtype() == h);
    CHECK(same_bits(eager, want));
    CHECK(same_bits(fx::jit(f)(x, y), want));
    fx::runtime::set_disabled("widen_half");  // one equation at a time in f32, unfused
    CHECK(same_bits(fx::jit(f)(x, y), want));
    fx::runtime::set_disabled("");
  }
}

TEST_CASE("half: jit fuses a half chain and its conversions into one group; widen_half off runs it unfused") {
  auto f = [](const fx::Tensor& x) { return fx::tanh(x) * x + fx::exp(-(x * x)); };
  const fx::Tensor x = fx::astype(fx::testing::random_tensor(fx::Shape{5000}, fx::f32, 7), fx::bf16);
  const fx::Jaxpr j = fx::make_jaxpr(f)(x);
  const std::string fused = fx::compile_jaxpr(j, fx::Device::cpu())->describe();
  CHECK_MESSAGE(fused.find("0 kernels, 1 fused groups") != std::string::npos, fused);
  fx::runtime::set_disabled("widen_half");
  const std::string unfused = fx::compile_jaxpr(j, fx::Device::cpu())->describe();
  fx::runtime::set_disabled("");
  CHECK_MESSAGE(unfused.find(" 0 fused groups") != std::string::npos, unfused);
  CHECK(same_bits(fx::jit(f)(x), f(x)));
}

TEST_CASE("half: a kernel handed half values directly throws a clear internal error, never computes on bits") {
  const fx::Tensor x = fx::astype(fx::tensor<float>({1, 2}), fx::f16);
  std::vector<fx::Tensor> out{fx::empty(x.aval())};
  const fx::Kernel sin_cpu = fx::find_primitive("sin")->kernel(fx::Backend::cpu);
  try {
    sin_cpu({x}, fx::no_params(), out);
    FAIL("a half kernel ran");
  } catch (const fx::DTypeError& e) {
    CHECK(std::string(e.what()).rfind("[kernel] internal: a kernel was instantiated for f16", 0) == 0);
  }
  // eval_primitive, the eager path, widens: the same call computes.
  CHECK(fx::eval_primitive(*fx::find_primitive("sin"), {x}, fx::no_params(), fx::Backend::cpu)[0].dtype() == fx::f16);
}

TEST_CASE("half: reductions and products accumulate in f32") {
  // 4096 ones: a bf16 (or f16 above 2048) running sum would stall; the f32 accumulator gives 4096 exactly.
  for (fx::DType h : {fx::f16, fx::bf16}) {
    CAPTURE(h);
    const fx::Tensor ones = fx::ones(fx::Shape{4096}, h);
    CHECK(fx::sum(ones).dtype() == h);
    CHECK(fx::sum(ones).item<double>() == 4096);
    CHECK(fx::jit([](const fx::Tensor& t) { return fx::sum(t); })(ones).item<double>() == 4096);
    CHECK(fx::matmul(ones, ones).item<double>() == 4096);
    CHECK(fx::jit([](const fx::Tensor& a) { return fx::matmul(a, a); })(ones).item<double>() == 4096);
    // Products of 2 x 2 blocks: the f32 product rounded once.
    const fx::Tensor a = fx::astype(fx::testing::random_tensor(fx::Shape{16, 64}, fx::f32, 1), h);
    const fx::Tensor b = fx::astype(fx::testing::random_tensor(fx::Shape{64, 8}, fx::f32, 2), h);
    const fx::Tensor want = fx::astype(fx::matmul(fx::astype(a, fx::f32), fx::astype(b, fx::f32)), h);
    CHECK(same_bits(fx::matmul(a, b), want));
    CHECK(close(fx::jit([](const fx::Tensor& p, const fx::Tensor& q) { return fx::matmul(p, q); })(a, b), want, 0, 0)
              .empty());
  }
}

TEST_CASE("half: grad, vmap and jit of half-precision functions") {
  auto loss = [](const fx::Tensor& w) { return fx::sum(fx::sin(w) * w); };
  const fx::Tensor w32 = fx::testing::random_tensor(fx::Shape{33}, fx::f32, 5);
  for (fx::DType h : {fx::f16, fx::bf16}) {
    CAPTURE(h);
    const double eps = h == fx::f16 ? 0x1p-10 : 0x1p-7;
    const fx::Tensor w = fx::astype(w32, h);
    const fx::Tensor g = fx::grad(loss)(w);
    REQUIRE(g.dtype() == h);
    const fx::Tensor wf = fx::astype(w, fx::f32);
    const fx::Tensor exact = fx::cos(wf) * wf + fx::sin(wf);  // d/dw sum(sin(w) w)
    CHECK(close(g, exact, 4 * eps, 8 * eps).empty());         // a few roundings of terms of magnitude up to 2
    CHECK(same_bits(fx::jit(fx::grad(loss))(w), g));
    // vmap over rows equals the loop over rows.
    const fx::Tensor m = fx::astype(fx::testing::random_tensor(fx::Shape{4, 6}, fx::f32, 6), h);
    auto row = [](const fx::Tensor& r) { return fx::sum(fx::exp(r) * 0.5); };
    const fx::Tensor batched = fx::vmap(row)(m);
    REQUIRE(batched.dtype() == h);
    for (int64_t i = 0; i < 4; ++i) {
      const fx::Tensor mi = fx::reshape(fx::slice(m, {i, 0}, {i + 1, 6}), std::vector<int64_t>{6});
      // The batched sum may add in another order (in f32): equal up to one rounding of the half result.
      const double b_i = fx::reshape(fx::slice(batched, {i}, {i + 1}), std::vector<int64_t>{}).item<double>();
      CHECK(std::fabs(b_i - row(mi).item<double>()) <= eps * std::fabs(b_i));
    }
    CHECK(same_bits(fx::jit(fx::vmap(row))(m), batched));
    // Control flow on half carries: each body equation widened where it runs.
    auto body = [](const fx::Tensor& c) { return c * 1.5 + 0.25; };
    const fx::Tensor c0 = fx::astype(fx::tensor<float>({1, 2}), h);
    const fx::Tensor looped = fx::fori_loop(
        0, 3, [&](const fx::Tensor&, const fx::Tensor& c) { return body(c); }, c0);
    CHECK(same_bits(looped, body(body(body(c0)))));
  }
}

// ---- the registry samples on half inputs ----

// Tolerance: the f32 sample on the half-rounded inputs, rounded to the half dtype, is what eval computes, so
// most outputs match exactly; samples whose function builds f32 values of its own (its constants are then
// f32 and promote), or computes a result in several rounded steps, may differ by rounding: atol + rtol * |want|
// with rtol = 4 ulps of the half dtype (f16 2^-8, bf16 2^-5) and atol = the same (values near zero after
// cancellation).
TEST_CASE("half: registry samples on bf16 and f16 give the f32 results rounded (eager, vmap and jit)") {
  int64_t checked = 0, exact = 0;
  std::vector<std::string> skipped;
  for (const auto& [name, family] : fx::testing::sample_registry()) {
    for (const fx::testing::Sample& s : family.make(fx::f32)) {
      if (s.collective_form) continue;
      bool any_f32 = false;
      for (const fx::Tensor& t : s.inputs) any_f32 = any_f32 || t.dtype() == fx::f32;
      if (!any_f32) continue;
      for (fx::DType h : {fx::bf16, fx::f16}) {
        CAPTURE(name);
        CAPTURE(s.label);
        CAPTURE(h);
        const double tol = h == fx::f16 ? 0x1p-8 : 0x1p-5;
        std::vector<fx::Tensor> half_in, rounded_in;
        for (const fx::Tensor& t : s.inputs) {
          const bool cast = t.dtype() == fx::f32;
          half_in.push_back(cast ? fx::astype(t, h) : t);
          rounded_in.push_back(cast ? fx::astype(half_in.back(), fx::f32) : t);
        }
        std::vector<fx::Tensor> want, got;
        try {
          want = s.fn(rounded_in);
          got = s.fn(half_in);
        } catch (const fx::Error& e) {
          // Samples that mix their own f32 values with the inputs are typed for f32 only.
          skipped.push_back(name + "/" + s.label + " (" + fx::dtype_name(h) + "): " + e.what());
          continue;
        }
        REQUIRE(got.size() == want.size());
        for (size_t k = 0; k < got.size(); ++k) {
          CAPTURE(k);
          const fx::Tensor w = want[k].dtype() == fx::f32 && got[k].dtype() == h ? fx::astype(want[k], h) : want[k];
          if (w.dtype() != got[k].dtype()) {  // a sample's own f32 constant promoted the result
            CHECK(got[k].dtype() == fx::f32);
          }
          const std::string diff = close(got[k], w, tol, tol);
          CHECK_MESSAGE(diff.empty(), diff);
          exact += w.dtype() == got[k].dtype() && same_bits(got[k], w);
          ++checked;
        }
        // vmap over two copies gives eager's values for each (batched rules on half values).
        std::vector<fx::Tensor> stacked;
        for (const fx::Tensor& t : half_in) stacked.push_back(fx::stack({t, t}));
        std::vector<fx::Tensor> mapped;
        try {
          mapped = fx::vmap([&](const std::vector<fx::Tensor>& in) { return s.fn(in); })(stacked);
        } catch (const fx::Error& e) {
          const std::string why = e.what();
          std::vector<fx::Tensor> stacked32;
          for (const fx::Tensor& t : rounded_in) stacked32.push_back(fx::stack({t, t}));
          bool threw32 = false;
          try {
            fx::vmap([&](const std::vector<fx::Tensor>& in) { return s.fn(in); })(stacked32);
          } catch (const fx::Error&) { threw32 = true; }
          CHECK_MESSAGE(threw32, "vmap threw on half inputs only: " << why);
        }
        // Batching rules may round intermediate values eager does not have (gram: the scaled rows before a
        // product), so the tolerance scales with the output's largest finite value.
        for (size_t k = 0; k < mapped.size() && k < got.size(); ++k)
          for (int64_t b = 0; b < 2; ++b) {
            const std::string diff = close(row_of(mapped[k], b), got[k], tol, tol * largest_finite(got[k]));
            CHECK_MESSAGE(diff.empty(), "vmap, batch element " << b << ": " << diff);
          }
        // jit (the widen_half pass, then fusion) gives eager's values; samples that cannot be jitted (they read
        // values) cannot in f32 either.
        auto jitted_fn = fx::jit([&](const std::vector<fx::Tensor>& in) { return s.fn(in); });
        std::vector<fx::Tensor> jitted;
        try {
          jitted = jitted_fn(half_in);
        } catch (const fx::Error&) {
          CHECK_THROWS(jitted_fn(rounded_in));
          continue;
        }
        for (size_t k = 0; k < got.size(); ++k) CHECK_MESSAGE(close(jitted[k], got[k], tol, tol).empty(), "jit");
      }
    }
  }
  std::cout << "[half] " << checked << " sample outputs on bf16/f16 (" << exact << " bit for bit), " << skipped.size()
            << " samples typed for f32 only\n";
  for (const std::string& s : skipped) std::cout << "  skipped " << s << "\n";
  CHECK(checked > 300);
  CHECK(exact * 10 > checked * 8);  // most are the f32 result rounded once, exactly
}

// Gradients: the samples' derivative rules (jvp, transpose) run on half values, every equation rounding, so
// they follow the f32 gradient on the rounded inputs to a tolerance: atol + rtol * |want| with both
// 2^-3 * (1 + max |want|) for bf16 and 2^-6 * (1 + max |want|) for f16 (32 ulps of the largest gradient: sums
// of many rounded terms, and rules such as solves that amplify rounding).
TEST_CASE("half: registry samples' gradients on bf16 and f16 follow the f32 gradients") {
  int64_t checked = 0;
  for (const auto& [name, family] : fx::testing::sample_registry()) {
    for (const fx::testing::Sample& s : family.make(fx::f32)) {
      if (s.collective_form || !s.differentiable) continue;
      std::vector<size_t> floating;
      for (size_t i = 0; i < s.inputs.size(); ++i)
        if (s.inputs[i].dtype() == fx::f32) floating.push_back(i);
      if (floating.empty()) continue;
      for (fx::DType h : {fx::bf16, fx::f16}) {
        CAPTURE(name);
        CAPTURE(s.label);
        CAPTURE(h);
        // sum_k <w_k, out_k> in f32 with fixed weights (multiples of 1/16), a function of the floating inputs.
        auto loss = [&](const std::vector<fx::Tensor>& xs) {
          std::vector<fx::Tensor> in = s.inputs;
          for (size_t j = 0; j < floating.size(); ++j) in[floating[j]] = xs[j];
          std::vector<fx::Tensor> outs = s.fn(in);
          fx::Tensor total = fx::zeros(fx::Shape{}, fx::f32);
          for (size_t k = 0; k < outs.size(); ++k)
            if (fx::is_floating(outs[k].dtype()))
              total = total + fx::sum(fx::astype(outs[k], fx::f32) *
                                      fx::testing::grid_tensor(outs[k].shape(), fx::f32, 100 + k));
          return total;
        };
        std::vector<fx::Tensor> half_x, rounded_x;
        for (size_t i : floating) {
          half_x.push_back(fx::astype(s.inputs[i], h));
          rounded_x.push_back(fx::astype(half_x.back(), fx::f32));
        }
        std::vector<fx::Tensor> want, got;
        try {
          want = fx::grad(loss)(rounded_x);
        } catch (const fx::Error&) {
          continue;  // not differentiable in f32 either (integer-valued paths)
        }
        got = fx::grad(loss)(half_x);
        REQUIRE(got.size() == want.size());
        for (size_t j = 0; j < got.size(); ++j) {
          CAPTURE(j);
          CHECK(got[j].dtype() == h);
          const double scale = largest_finite(want[j]);
          const double tol = (h == fx::f16 ? 0x1p-6 : 0x1p-3) * scale;
          const std::string diff = close(got[j], want[j], 0, tol);
          CHECK_MESSAGE(diff.empty(), diff);
          ++checked;
        }
      }
    }
  }
  std::cout << "[half] " << checked << " sample gradients on bf16/f16\n";
  CHECK(checked > 200);
}
