// Samples of the elementwise binary primitives.
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

#include "samples.hpp"

namespace fluxion::testing {
namespace binary_samples {

namespace lax = fluxion::lax;
using Fn = Tensor (*)(const Tensor&, const Tensor&);

struct Range {
  double lo, hi;
};

// Operand shapes: equal shapes of every rank (size-0 dims included) and rank 0 with rank n, both ways.
const std::vector<std::pair<Shape, Shape>>& shape_pairs() {
  static const std::vector<std::pair<Shape, Shape>> s{{Shape{}, Shape{}},
                                                      {Shape{0}, Shape{0}},
                                                      {Shape{7}, Shape{7}},
                                                      {Shape{3, 4}, Shape{3, 4}},
                                                      {Shape{2, 0, 3}, Shape{2, 0, 3}},
                                                      {Shape{2, 3, 5}, Shape{2, 3, 5}},
                                                      {Shape{}, Shape{7}},
                                                      {Shape{3, 4}, Shape{}},
                                                      {Shape{}, Shape{0}},
                                                      {Shape{2, 0, 3}, Shape{}},
                                                      {Shape{}, Shape{2, 3, 5}},
                                                      {Shape{2, 3, 5}, Shape{}}};
  return s;
}

// Small integers stored as `dtype`: ties are frequent, which comparisons need.
Tensor small_ints(const Shape& shape, DType dtype, uint64_t seed) {
  Tensor t = random_tensor(shape, i32, seed, -2, 2);
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return from_vector(t.to_vector<T>(), shape);
  });
}

struct Spec {
  Fn f;
  Range a{-5, 5}, b{-5, 5};
  bool predicate = false;  // the result is bool
  bool ties = false;       // draw small integers (in every dtype) so that equal operands occur
};

std::string pair_label(const AbstractValue& a, const AbstractValue& b, const char* extra = "") {
  std::ostringstream os;
  os << a << ", " << b << extra;
  return os.str();
}

// Values where the integer conventions matter: division/remainder by 0 and -1, INT_MIN, wrapping.
template <class T> std::pair<std::vector<T>, std::vector<T>> int_special_values() {
  const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  return {{lo, lo, hi, hi, 7, -7, 7, -7, 0, 5, -5, 1, lo, hi}, {-1, 0, 1, -1, 0, 0, -2, 2, 0, 3, -3, lo, lo, hi}};
}

// IEEE special values: NaN on either side, signed zeros, infinities, equal operands.
template <class T> std::pair<std::vector<T>, std::vector<T>> float_special_values() {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  return {{nan, 1, nan, T(-0.0), T(0.0), inf, -inf, T(2.5), T(-3), T(1e-30), -inf, T(4)},
          {T(1), nan, nan, T(0.0), T(-0.0), T(1), inf, T(2.5), T(4), T(-2), T(-1), -inf}};
}

Sample special_sample(Fn f, DType d, bool predicate) {
  return dispatch_dtype(d, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::pair<std::vector<T>, std::vector<T>> v;
    if constexpr (std::is_floating_point_v<T>) v = float_special_values<T>();
    else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) v = int_special_values<T>();
    else v = {{true, true, false, false}, {true, false, true, false}};
    Shape s{static_cast<int64_t>(v.first.size())};
    AbstractValue av{s, d};
    return Sample{pair_label(av, av, " specials"),
                  {from_vector(v.first, s), from_vector(v.second, s)},
                  binary_fn(f),
                  {AbstractValue{s, predicate ? boolean : d}}};
  });
}

// Samples over every shape pair for each dtype, plus special values where `specials` says so.
std::vector<Sample> samples_for(const Spec& spec, const std::vector<DType>& dtypes, bool specials) {
  std::vector<Sample> out;
  uint64_t seed = 101;
  for (DType d : dtypes) {
    for (const auto& [sa, sb] : shape_pairs()) {
      AbstractValue aa{sa, d}, ab{sb, d};
      Tensor a = spec.ties ? small_ints(sa, d, seed) : random_tensor(sa, d, seed, spec.a.lo, spec.a.hi);
      Tensor b = spec.ties ? small_ints(sb, d, seed + 1) : random_tensor(sb, d, seed + 1, spec.b.lo, spec.b.hi);
      seed += 2;
      Shape so = sa.size() == 0 ? sb : sa;
      out.push_back(
          Sample{pair_label(aa, ab), {a, b}, binary_fn(spec.f), {AbstractValue{so, spec.predicate ? boolean : d}}});
    }
    if (specials) out.push_back(special_sample(spec.f, d, spec.predicate));
  }
  return out;
}

std::string tag(const std::string& name) { return "[" + name + "]"; }

// A dtype different from `d` (for the dtype-mismatch bad input).
DType other_dtype(DType d) { return d == i32 ? i64 : d == boolean ? i32 : d == f64 ? f32 : f64; }

// Bad inputs shared by every binary primitive: mismatched dtypes and mismatched shapes.
std::vector<BadInput> mismatch_bad(const std::string& name, Fn f, DType d) {
  const DType o = other_dtype(d);
  return {
      bad<DTypeError>("dtype mismatch",
                      tag(name) + " operand dtypes differ: " + dtype_name(d) + "[3] and " + dtype_name(o) + "[3]",
                      [f, d, o] { f(zeros({3}, d), zeros({3}, o)); }),
      bad<ShapeError>("shape mismatch",
                      tag(name) + " shapes " + dtype_name(d) + "[2,3] and " + dtype_name(d) + "[3,2] differ", [f, d] {
                        f(zeros({2, 3}, d), zeros({3, 2}, d));
                      })};
}

// A third bad input: an operand of a dtype class the primitive does not accept.
BadInput wrong_class_bad(const std::string& name, Fn f, DType wrong, const std::string& accepts) {
  std::ostringstream os;
  os << tag(name) << " got an operand of type " << AbstractValue{Shape{2}, wrong} << "; " << name << " accepts "
     << accepts;
  return bad<DTypeError>("wrong dtype class", os.str(), [f, wrong] { f(zeros({2}, wrong), zeros({2}, wrong)); });
}

// Registers `name`: samples in the float dtype (when `float_too`) and the `extra` dtypes; bad inputs
// with `bad_dtype` operands, plus operands of dtype `wrong` when the primitive rejects some class.
void register_binary(const std::string& name, const Spec& spec, std::vector<DType> extra, bool float_too, bool specials,
                     DType bad_dtype, std::optional<DType> wrong = {}, const std::string& accepts = "") {
  std::vector<BadInput> b = mismatch_bad(name, spec.f, bad_dtype);
  if (wrong) b.push_back(wrong_class_bad(name, spec.f, *wrong, accepts));
  b.push_back(bad<Error>("empty tensor handle", tag(name), [f = spec.f] { f(Tensor(), zeros({}, f32)); }));
  register_samples(name, {[=](DType dt) {
                            std::vector<DType> dtypes;
                            if (float_too) dtypes.push_back(dt);
                            dtypes.insert(dtypes.end(), extra.begin(), extra.end());
                            return samples_for(spec, dtypes, specials);
                          },
                          b});
}

const bool registered = [] {
  const std::string numeric = "i32, i64, f32, f64", floating = "f32, f64", int_or_bool = "bool, i32, i64";
  const std::vector<DType> ints{i32, i64};
  // Arithmetic: floats, and integers with the wrapping / division-by-zero conventions.
  register_binary("add", {lax::add}, ints, true, true, f32, boolean, numeric);
  register_binary("sub", {lax::sub}, ints, true, true, f32, boolean, numeric);
  register_binary("mul", {lax::mul}, ints, true, true, f32, boolean, numeric);
  register_binary("div", {lax::div, {-5, 5}, {-4, 4}}, ints, true, true, f32, boolean, numeric);
  register_binary("rem", {lax::rem, {-10, 10}, {-4, 4}}, ints, true, true, f64, boolean, numeric);
  register_binary("max", {lax::max}, ints, true, true, f32, boolean, numeric);
  register_binary("min", {lax::min}, ints, true, true, f64, boolean, numeric);
  // Floating only; pow on positive bases (no NaN, where libm and Eigen's pow may differ).
  register_binary("pow", {lax::pow, {0.1, 4}, {-3, 3}}, {}, true, false, f32, i32, floating);
  register_binary("atan2", {lax::atan2, {-3, 3}, {-3, 3}}, {}, true, true, f64, i64, floating);
  // Comparisons: bool results; small integers in every dtype so that ties occur.
  for (auto [name, f] :
       {std::pair<const char*, Fn>{"lt", lax::lt}, {"le", lax::le}, {"gt", lax::gt}, {"ge", lax::ge}}) {
    Spec s{f};
    s.predicate = true;
    s.ties = true;
    register_binary(name, s, ints, true, true, f32, boolean, numeric);
  }
  for (auto [name, f] : {std::pair<const char*, Fn>{"eq", lax::eq}, {"ne", lax::ne}}) {
    Spec s{f};
    s.predicate = true;
    s.ties = true;
    register_binary(name, s, {i32, i64, boolean}, true, true, i32);
  }
  // Logical on bool, bitwise on integers.
  register_binary("and", {lax::logical_and}, {boolean, i32, i64}, false, true, boolean, f32, int_or_bool);
  register_binary("or", {lax::logical_or}, {boolean, i32, i64}, false, true, boolean, f64, int_or_bool);
  return true;
}();

}  // namespace binary_samples
}  // namespace fluxion::testing
