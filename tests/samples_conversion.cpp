// Samples of the conversion primitives: select and convert_element_type.
#include <cmath>
#include <limits>
#include <sstream>

#include "samples.hpp"

namespace fluxion::testing {
namespace conversion_samples {

namespace lax = fluxion::lax;

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s{Shape{}, Shape{0}, Shape{7}, Shape{3, 4}, Shape{2, 0, 3}, Shape{2, 3, 5}};
  return s;
}

// ---- select ----

std::vector<Sample> select_samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 301;
  auto fn = ternary_fn([](const Tensor& p, const Tensor& a, const Tensor& b) { return lax::select(p, a, b); });
  for (DType d : {dt, i32, i64, boolean}) {
    for (const Shape& s : shapes()) {
      AbstractValue av{s, d};
      Tensor a = random_tensor(s, d, seed++, -5, 5), b = random_tensor(s, d, seed++, -5, 5);
      std::ostringstream label;
      label << "pred " << AbstractValue{s, boolean} << ", " << av;
      out.push_back(Sample{label.str(), {random_tensor(s, boolean, seed++), a, b}, fn, {av}});
      // A rank-0 pred picks a whole operand: both values.
      if (s.size() != 0)
        for (bool p : {true, false}) {
          std::ostringstream l;
          l << "pred bool[]=" << p << ", " << av;
          out.push_back(Sample{l.str(), {scalar(p), a, b}, fn, {av}});
        }
    }
  }
  return out;
}

std::vector<BadInput> select_bad() {
  return {
      bad<DTypeError>("float pred", "[select] pred must be bool, got f32[3]",
                      [] { lax::select(zeros({3}, f32), zeros({3}, f32), zeros({3}, f32)); }),
      bad<DTypeError>("integer pred", "[select] pred must be bool, got i32[]",
                      [] { lax::select(zeros({}, i32), zeros({3}, f64), zeros({3}, f64)); }),
      bad<DTypeError>("operand dtypes differ", "[select] on_true and on_false dtypes differ: f32[3] and f64[3]",
                      [] { lax::select(zeros({3}, boolean), zeros({3}, f32), zeros({3}, f64)); }),
      bad<ShapeError>("operand shapes differ", "[select] on_true and on_false shapes differ: f32[2,3] and f32[3,2]",
                      [] {
                        lax::select(zeros({}, boolean), zeros({2, 3}, f32), zeros({3, 2}, f32));
                      }),
      bad<ShapeError>("rank-0 on_true with rank-1 on_false",
                      "[select] on_true and on_false shapes differ: i32[] and i32[4]",
                      [] { lax::select(zeros({4}, boolean), zeros({}, i32), zeros({4}, i32)); }),
      bad<ShapeError>("pred shape differs", "[select] pred bool[2] must have the operands' shape [3]",
                      [] { lax::select(zeros({2}, boolean), zeros({3}, f32), zeros({3}, f32)); }),
  };
}

// ---- convert_element_type ----

// Values where conversions are delicate: NaN, infinities, out-of-range magnitudes (saturation),
// the float just below 2^31 and 2^63, exact limits, signed zeros and fractions (truncation).
template <class T> std::vector<T> float_specials() {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  const T two31 = T(2147483648.0), two63 = T(9223372036854775808.0);
  return {nan,
          -nan,
          inf,
          -inf,
          T(3e9),
          T(-3e9),
          T(1e19),
          T(-1e19),
          T(2147483647.0),
          two31,
          -two31,
          T(-2147483649.0),
          std::nextafter(two31, T(0)),
          std::nextafter(two63, T(0)),
          -std::nextafter(two63, T(0)),
          two63,
          -two63,
          T(9.3e18),
          T(-0.0),
          T(0.5),
          T(-0.5),
          T(-1.7),
          T(2.9),
          T(1e-40),
          T(65537.75)};
}

template <class T> std::vector<T> int_specials() {
  const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  std::vector<T> v{lo, hi, 0, -1, 1, T(lo + 1), T(16777217), T(-16777217)};
  if constexpr (sizeof(T) == 8) v.insert(v.end(), {T(2147483648LL), T(-2147483649LL), T(9007199254740993LL)});
  return v;
}

Sample convert_sample(std::string label, Tensor x, DType to) {
  Shape s = x.shape();
  return Sample{std::move(label),
                {x},
                unary_fn([to](const Tensor& t) { return lax::convert_element_type(t, to); }),
                {AbstractValue{s, to}}};
}

std::vector<Sample> convert_samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 401;
  for (DType from : {dt, i32, i64, boolean}) {
    for (DType to : {boolean, i32, i64, f32, f64}) {
      for (const Shape& s : shapes()) {
        std::ostringstream label;
        label << AbstractValue{s, from} << " -> " << to;
        out.push_back(convert_sample(label.str(), random_tensor(s, from, seed++, -7, 7), to));
        // An f32 result rounds away the finite-difference steps (f64 -> f64 checks the same rule).
        if (from == f64 && to == f32) out.back().differentiable = false;
      }
      std::ostringstream label;
      label << dtype_name(from) << " specials -> " << to;
      Tensor x = dispatch_dtype(from, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bool>) return from_vector(std::vector<bool>{true, false, false, true});
        else if constexpr (std::is_floating_point_v<T>) return from_vector(float_specials<T>());
        else return from_vector(int_specials<T>());
      });
      out.push_back(convert_sample(label.str(), x, to));
    }
  }
  return out;
}

std::vector<BadInput> convert_bad() {
  return {
      bad<Error>("empty tensor handle", "[convert_element_type] an input is an empty",
                 [] { lax::convert_element_type(Tensor(), f32); }),
      bad<DTypeError>("unknown dtype code", "[convert_element_type] new_dtype has the unknown dtype code 9",
                      [] { lax::convert_element_type(zeros({2}, f32), static_cast<DType>(9)); }),
      bad<ShapeError>("two operands", "[convert_element_type] takes 1 operand(s), got 2",
                      [] {
                        fluxion::bind(*find_primitive("convert_element_type"), {zeros({2}, f32), zeros({2}, f32)});
                      }),
  };
}

const bool registered = [] {
  register_samples("select", {select_samples, select_bad()});
  register_samples("convert_element_type", {convert_samples, convert_bad()});
  return true;
}();

}  // namespace conversion_samples
}  // namespace fluxion::testing
