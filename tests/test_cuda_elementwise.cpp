// The CUDA elementwise kernels (backends/cuda/kernels/elementwise.hpp) and the shared scalar
// functors they apply (primitives/scalar_functions.hpp) on the values where elementwise semantics
// are delicate, in every dtype each primitive accepts (the registry samples cover f32 and f64 on
// ordinary values): the cuda_emulated kernels equal the reference kernels, integers and bools
// exactly (wraparound, division by 0, INT_MIN / -1), floats within compare_tensors' tolerance with
// the same NaNs, infinities and signs of zero. Also: the functor names jit's code generator uses.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cuda/scalar_functor_names.hpp"
#include "fluxion/lax.hpp"
#include "primitives/conversion.hpp"
#include "primitives/scalar_functions.hpp"
#include "sample_eval.hpp"

namespace fx = fluxion;

namespace {

const std::vector<fx::DType> kAllDTypes{fx::boolean, fx::i32, fx::i64, fx::f32, fx::f64};

template <class T> std::vector<T> int_specials() {
  const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  return {T(0), T(1), T(-1), T(2), T(-2), T(7), T(-7), T(3), lo, hi, T(lo + 1), T(hi - 1), T(123456)};
}

template <class T> std::vector<T> float_specials() {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const T below_half = std::nextafter(T(0.5), T(0)), tiny = std::numeric_limits<T>::denorm_min();
  return {T(0),  -T(0), T(0.5), T(-0.5), T(1.5), T(-1.5), T(2.5),  T(-2.5), below_half,
          T(1),  T(-1), T(3.7), T(-3.7), T(100), T(-100), T(1e10), T(-3e9), tiny,
          -tiny, inf,   -inf,   nan,     -nan,   T(7),    T(-7),   T(1e-3), T(2147483647.0)};
}

// The delicate values of dtype d, as a rank-1 tensor.
fx::Tensor specials(fx::DType d) {
  switch (d) {
    case fx::DType::boolean: return fx::tensor<bool>({true, false, true, true, false});
    case fx::DType::i32: return fx::from_vector(int_specials<int32_t>(), fx::Shape{13});
    case fx::DType::i64: return fx::from_vector(int_specials<int64_t>(), fx::Shape{13});
    case fx::DType::f32: return fx::from_vector(float_specials<float>(), fx::Shape{27});
    case fx::DType::f64: return fx::from_vector(float_specials<double>(), fx::Shape{27});
  }
  return {};
}

// The elements of rank-1 x at `indices`, as a rank-1 tensor.
fx::Tensor take(const fx::Tensor& x, const std::vector<int64_t>& indices) {
  return fx::dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const std::vector<T> v = x.to_vector<T>();
    std::vector<T> r;
    for (int64_t i : indices) r.push_back(v[static_cast<size_t>(i)]);
    return fx::from_vector(r, fx::Shape{static_cast<int64_t>(r.size())});
  });
}

// Element k of rank-1 x as a rank-0 tensor.
fx::Tensor element(const fx::Tensor& x, int64_t k) {
  return fx::dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return fx::scalar(T(x.to_vector<T>()[static_cast<size_t>(k)]));
  });
}

// x reversed.
fx::Tensor reversed(const fx::Tensor& x) {
  std::vector<int64_t> idx;
  for (int64_t i = x.size(); i-- > 0;) idx.push_back(i);
  return take(x, idx);
}

// Every (a, b) pair of the elements of x: two rank-1 tensors of size n^2.
std::pair<fx::Tensor, fx::Tensor> all_pairs(const fx::Tensor& x) {
  const int64_t n = x.size();
  std::vector<int64_t> ia, ib;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) ia.push_back(i), ib.push_back(j);
  return {take(x, ia), take(x, ib)};
}

// "" when `got` (cuda_emulated) equals `want` (reference): exactly for integers and bools, else
// within compare_tensors' tolerance and with the same signs of zero.
std::string mismatch(const fx::Tensor& got, const fx::Tensor& want) {
  if (got.aval() != want.aval()) return "avals differ";
  if (!fx::is_floating(got.dtype())) {
    const std::vector<int64_t> g = got.to_vector<int64_t>(), w = want.to_vector<int64_t>();
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i] != w[i])
        return "element " + std::to_string(i) + ": got " + std::to_string(g[i]) + ", want " + std::to_string(w[i]);
    return "";
  }
  std::string diff = fx::testing::compare_tensors(got, want);
  return diff.empty() ? fx::testing::zero_sign_mismatch(got, want) : diff;
}

// Runs p on `in` with the reference and the cuda_emulated kernels and checks they agree; false
// when the shape rule rejects the inputs (a dtype p does not accept).
bool agrees(const fx::Primitive& p, const std::vector<fx::Tensor>& in, const fx::Params& params = fx::no_params()) {
  std::vector<fx::Tensor> want;
  try {
    want = fx::eval_primitive(p, in, params, fx::Backend::reference);
  } catch (const fx::DTypeError&) { return false; }
  std::vector<fx::Tensor> got = fx::eval_primitive(p, in, params, fx::Backend::cuda_emulated);
  REQUIRE(got.size() == want.size());
  CHECK_MESSAGE(mismatch(got[0], want[0]).empty(), p.name << ": " << mismatch(got[0], want[0]));
  return true;
}

bool is_functor_primitive(const fx::Primitive& p) {
  return p.traits.elementwise && fx::cuda::scalar_functor_name(p) != nullptr;
}

}  // namespace

TEST_CASE("cuda elementwise: unary kernels equal the reference on special values of every accepted dtype") {
  for (const fx::Primitive* p : fx::all_primitives()) {
    if (!is_functor_primitive(*p) || fx::cuda::scalar_functor_arity(*p) != 1 ||
        p == &fx::primitives::conversion_family::convert_element_type_p())
      continue;
    CAPTURE(p->name);
    int accepted = 0;
    for (fx::DType d : kAllDTypes) {
      CAPTURE(d);
      const fx::Tensor x = specials(d);
      if (!agrees(*p, {x})) continue;
      ++accepted;
      agrees(*p, {element(x, 1)});                  // rank 0
      agrees(*p, {fx::zeros(fx::Shape{0, 3}, d)});  // empty
    }
    CHECK(accepted >= 1);
  }
}

TEST_CASE("cuda elementwise: binary kernels equal the reference on every pair of special values, rank-0 either side") {
  for (const fx::Primitive* p : fx::all_primitives()) {
    if (!is_functor_primitive(*p) || fx::cuda::scalar_functor_arity(*p) != 2) continue;
    CAPTURE(p->name);
    int accepted = 0;
    for (fx::DType d : kAllDTypes) {
      CAPTURE(d);
      const fx::Tensor x = specials(d);
      auto [a, b] = all_pairs(x);
      if (!agrees(*p, {a, b})) continue;
      ++accepted;
      for (int64_t k = 0; k < x.size(); ++k) {  // each special value as a rank-0 operand, on both sides
        const fx::Tensor s = element(x, k);
        agrees(*p, {s, x});
        agrees(*p, {x, s});
      }
      const fx::Tensor s = element(x, 0);
      agrees(*p, {s, s});
      agrees(*p, {fx::zeros(fx::Shape{2, 0}, d), fx::zeros(fx::Shape{2, 0}, d)});
      agrees(*p, {s, fx::zeros(fx::Shape{0}, d)});
    }
    CHECK(accepted >= 1);
  }
}

TEST_CASE("cuda elementwise: select and convert_element_type equal the reference in every dtype") {
  namespace c = fx::primitives::conversion_family;
  for (fx::DType d : kAllDTypes) {
    CAPTURE(d);
    const fx::Tensor x = specials(d), y = reversed(x);
    std::vector<bool> every_third;
    for (int64_t i = 0; i < x.size(); ++i) every_third.push_back(i % 3 == 0);
    const fx::Tensor pred = fx::from_vector(every_third, x.shape());
    CHECK(agrees(c::select_p(), {pred, x, y}));
    CHECK(agrees(c::select_p(), {fx::scalar(true), x, y}));
    CHECK(agrees(c::select_p(), {fx::scalar(false), x, y}));
    CHECK(agrees(c::select_p(),
                 {fx::zeros(fx::Shape{0}, fx::boolean), fx::zeros(fx::Shape{0}, d), fx::zeros(fx::Shape{0}, d)}));
    for (fx::DType to : kAllDTypes) {
      CAPTURE(to);
      const c::ConvertElementTypeParams params(to);
      CHECK(agrees(c::convert_element_type_p(), {x}, params));
      CHECK(agrees(c::convert_element_type_p(), {fx::zeros(fx::Shape{0}, d)}, params));
    }
  }
}

TEST_CASE("scalar functor names: every elementwise primitive has one, declared in the shared source") {
  const std::string source = fx::scalar_functions::source();
  int named = 0;
  for (const fx::Primitive* p : fx::all_primitives()) {
    CAPTURE(p->name);
    const char* name = fx::cuda::scalar_functor_name(*p);
    const int arity = fx::cuda::scalar_functor_arity(*p);
    if (!p->traits.elementwise) {
      CHECK(name == nullptr);
      CHECK(arity == 0);
      continue;
    }
    REQUIRE(name != nullptr);
    ++named;
    const std::string qualified = name, prefix = "fluxion::scalar_functions::";
    REQUIRE(qualified.rfind(prefix, 0) == 0);
    const std::string short_name = qualified.substr(prefix.size());
    CHECK(source.find("struct " + short_name + " ") != std::string::npos);
    CHECK(arity >= 1);
    CHECK(arity <= 3);
  }
  CHECK(named == 40);  // 20 unary, 17 binary, select, convert_element_type, erf_inv
  CHECK(fx::cuda::scalar_type_name(fx::i64) == std::string("long long"));
  // The text is the compiled one, FLUXION_HD unexpanded (jit defines it for NVRTC).
  CHECK(source.find("FLUXION_HD static") != std::string::npos);
  CHECK(source.find("#include") == std::string::npos);
}

TEST_CASE("scalar functors: integer edge cases on the host") {
  namespace s = fx::scalar_functions;
  const int32_t lo = std::numeric_limits<int32_t>::min();
  CHECK(s::Div::apply(lo, -1) == lo);
  CHECK(s::Div::apply(7, 0) == -1);
  CHECK(s::Rem::apply(lo, -1) == 0);
  CHECK(s::Rem::apply(-7, 0) == -7);
  CHECK(s::Rem::apply(-7, 2) == -1);
  CHECK(s::Neg::apply(lo) == lo);
  CHECK(s::Abs::apply(int64_t(std::numeric_limits<int64_t>::min())) == std::numeric_limits<int64_t>::min());
  CHECK(s::Add::apply(std::numeric_limits<int32_t>::max(), 1) == lo);
  CHECK(s::ConvertElementType<int32_t>::apply(std::nanf("")) == 0);
  CHECK(s::ConvertElementType<int32_t>::apply(2147483647.0f) == std::numeric_limits<int32_t>::max());
  CHECK(s::ConvertElementType<int64_t>::apply(-1e30) == std::numeric_limits<int64_t>::min());
  CHECK(s::ConvertElementType<bool>::apply(std::nan("")) == true);
  CHECK(std::signbit(s::Sign::apply(-0.0)));
  CHECK(std::signbit(s::Max::apply(-0.0f, 0.0f)));
  CHECK(s::RoundNearestEven::apply(2.5) == 2.0);
  CHECK(s::Round::apply(2.5) == 3.0);
}
