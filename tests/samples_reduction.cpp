// Samples of the reduction primitives: reduce_sum/max/min/prod, argmax/argmin, cumsum.
//
// Tolerances: the reference sums in extended precision and rounds once, the CPU kernel sums in
// the element type in Eigen's (vectorised) order. For reductions of up to a few dozen random
// values in [-2, 2] the f32/f64 tolerances of compare_tensors hold; the long reductions (hundreds
// of terms) use values on a 1/16 grid, whose sums are exact in f32 and f64 in any order, so they
// check the indexing exactly instead of the rounding.
#include <cmath>
#include <limits>

#include "samples.hpp"

namespace fluxion::testing {
namespace reduction_samples {

namespace lax = fluxion::lax;
using Axes = std::vector<int64_t>;
using ReduceFn = Tensor (*)(const Tensor&, const Axes&);

std::string axes_label(const AbstractValue& a, const std::string& params) {
  std::ostringstream os;
  os << a << " " << params;
  return os.str();
}

std::string axes_str(const Axes& axes) {
  std::ostringstream os;
  detail::print_param(os, axes);
  return os.str();
}

// `t` with NaN written at the given flat positions (floating dtypes only).
Tensor with_nans(const Tensor& t, const std::vector<int64_t>& at) {
  std::vector<double> v = t.to_vector<double>();
  for (int64_t i : at) v[static_cast<size_t>(i)] = std::numeric_limits<double>::quiet_NaN();
  return dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> c(v.size());
    for (size_t i = 0; i < v.size(); ++i) c[i] = static_cast<T>(v[i]);
    return from_vector(c, t.shape());
  });
}

// `t` with exact zeros at the given flat positions.
Tensor with_zeros(const Tensor& t, const std::vector<int64_t>& at) {
  std::vector<double> v = t.to_vector<double>();
  for (int64_t i : at) v[static_cast<size_t>(i)] = 0;
  return dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> c(v.size());
    for (size_t i = 0; i < v.size(); ++i) c[i] = static_cast<T>(v[i]);
    return from_vector(c, t.shape());
  });
}

// Values from {-1, 0, 1}: many ties.
Tensor tie_tensor(const Shape& s, DType dt, uint64_t seed) {
  std::vector<double> v = random_tensor(s, f64, seed, -1.4, 1.4).to_vector<double>();
  return dispatch_dtype(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<T> c(v.size());
    for (size_t i = 0; i < v.size(); ++i) c[i] = static_cast<T>(std::round(v[i]));
    return from_vector(c, s);
  });
}

Shape drop(const Shape& s, const Axes& axes) {
  Shape out;
  for (int64_t d = 0; d < s.size(); ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) out.push_back(s[d]);
  return out;
}

struct Case {
  Shape shape;
  Axes axes;
  Shape out;  // hand-written expected output shape
};

// (shape, axes, expected output shape): rank 0, size-0 dims, leading / trailing / middle /
// non-contiguous axes, size-1 axes, axes=().
const std::vector<Case>& reduce_cases() {
  static const std::vector<Case> c{
      {{}, {}, {}},
      {{7}, {}, {7}},
      {{7}, {0}, {}},
      {{0}, {0}, {}},
      {{3, 4}, {0}, {4}},
      {{3, 4}, {1}, {3}},
      {{3, 4}, {0, 1}, {}},
      {{2, 0, 3}, {1}, {2, 3}},
      {{2, 0, 3}, {0, 2}, {0}},
      {{2, 0, 3}, {0}, {0, 3}},
      {{2, 3, 5}, {0}, {3, 5}},
      {{2, 3, 5}, {1}, {2, 5}},
      {{2, 3, 5}, {2}, {2, 3}},
      {{2, 3, 5}, {0, 1}, {5}},
      {{2, 3, 5}, {1, 2}, {2}},
      {{2, 3, 5}, {0, 2}, {3}},
      {{2, 3, 5}, {0, 1, 2}, {}},
      {{4, 1, 6}, {1}, {4, 6}},
      {{4, 1, 6}, {0, 2}, {1}},
      {{1, 5, 1}, {0, 2}, {5}},
      {{3, 4, 5, 6}, {1, 3}, {3, 5}},
      {{3, 4, 5, 6}, {0, 2}, {4, 6}},
      {{3, 4, 5, 6}, {1, 2}, {3, 6}},
      {{3, 4, 5, 6}, {0, 3}, {4, 5}},
      {{2, 3, 2, 3, 2}, {0, 2, 4}, {3, 3}},
      {{6, 40}, {0}, {40}},
      {{2, 5, 48}, {1}, {2, 48}},
  };
  return c;
}

// Long reductions on grid values: rows of 300, columns of 257 and 100, middle axes of 120 and 60
// (the last wider than one 2048-column accumulation chunk).
const std::vector<Case>& long_cases() {
  static const std::vector<Case> c{
      {{6, 300}, {1}, {6}},       {{257, 9}, {0}, {9}},   {{3, 120, 5}, {1}, {3, 5}},
      {{40, 3, 20}, {0, 2}, {3}}, {{100, 70}, {0}, {70}}, {{2, 60, 2100}, {1}, {2, 2100}},
  };
  return c;
}

// `grid_ties`: the grid samples have exact ties among the reduced values, where reduce_max/min are
// not differentiable, so finite differences cannot check them (they are flagged).
std::vector<Sample> reduce_samples(ReduceFn f, DType dt, double lo, double hi, bool long_ones, bool grid_ties = false) {
  std::vector<Sample> out;
  uint64_t seed = 100;
  auto add = [&](const Case& c, Tensor x, const std::string& note, bool differentiable = true) {
    const Axes axes = c.axes;
    const DType d = x.dtype();
    out.push_back(Sample{axes_label(x.aval(), "axes=" + axes_str(axes) + note),
                         {x},
                         unary_fn([f, axes](const Tensor& t) { return f(t, axes); }),
                         {AbstractValue{c.out, d}},
                         differentiable});
  };
  for (const Case& c : reduce_cases()) add(c, random_tensor(c.shape, dt, seed++, lo, hi), "");
  if (long_ones)
    for (const Case& c : long_cases()) add(c, grid_tensor(c.shape, dt, seed++), " (grid)", !grid_ties);
  for (DType d : {i32, i64})
    for (const Case& c : {reduce_cases()[3], reduce_cases()[10], reduce_cases()[15], reduce_cases()[20]})
      add(c, random_tensor(c.shape, d, seed++, -3, 3), "");
  return out;
}

// NaN propagates through reduce_max/min: rows / columns with and without NaN.
std::vector<Sample> nan_samples(ReduceFn f, DType dt) {
  std::vector<Sample> out;
  Tensor x = with_nans(random_tensor({4, 5}, dt, 7), {6, 8, 19});
  Tensor wide = with_nans(random_tensor({6, 40}, dt, 8), {3, 45, 83, 84, 239});
  for (const Axes& axes : {Axes{0}, Axes{1}, Axes{0, 1}}) {
    Shape s = drop(x.shape(), axes);
    out.push_back(Sample{axes_label(x.aval(), "axes=" + axes_str(axes) + " with NaN"),
                         {x},
                         unary_fn([f, axes](const Tensor& t) { return f(t, axes); }),
                         {AbstractValue{s, dt}}});
  }
  out.push_back(Sample{axes_label(wide.aval(), "axes=(0,) with NaN"),
                       {wide},
                       unary_fn([f](const Tensor& t) { return f(t, {0}); }),
                       {AbstractValue{{40}, dt}}});
  return out;
}

std::vector<BadInput> reduce_bad(const std::string& name, ReduceFn f) {
  return {bad<AxisError>("unsorted axes", "[" + name + "] axes (1,0) for operand f32[3,4] must be sorted and unique",
                         [f] {
                           f(zeros({3, 4}, f32), {1, 0});
                         }),
          bad<AxisError>("repeated axis", "[" + name + "] axes (1,1)",
                         [f] {
                           f(zeros({3, 4}, f32), {1, 1});
                         }),
          bad<AxisError>("axis out of range", "[" + name + "] axis 2 is out of range for operand f64[3,4] of rank 2",
                         [f] {
                           f(zeros({3, 4}, f64), {2});
                         }),
          bad<AxisError>("negative axis", "[" + name + "] axis -1 is out of range", [f] { f(zeros({3}, f64), {-1}); }),
          bad<AxisError>("axis of a rank-0 operand", "[" + name + "] axis 0", [f] { f(zeros({}, f32), {0}); }),
          bad<DTypeError>("bool operand", "[" + name + "] got an operand of type bool[2]",
                          [f] { f(zeros({2}, boolean), {0}); })};
}

// ---- argmax / argmin ----

using ArgFn = Tensor (*)(const Tensor&, int64_t, DType);

std::vector<Sample> arg_samples(ArgFn f, DType dt) {
  struct ArgCase {
    Shape shape;
    int64_t axis;
    Shape out;
  };
  const std::vector<ArgCase> cases{
      {{7}, 0, {}},           {{1}, 0, {}},           {{3, 4}, 0, {4}},       {{3, 4}, 1, {3}},
      {{2, 3, 5}, 0, {3, 5}}, {{2, 3, 5}, 1, {2, 5}}, {{2, 3, 5}, 2, {2, 3}}, {{2, 0, 3}, 0, {0, 3}},
      {{0, 4}, 1, {0}},       {{4, 1, 6}, 1, {4, 6}}, {{5, 64}, 1, {5}},      {{64, 5}, 0, {5}},
  };
  std::vector<Sample> out;
  uint64_t seed = 300;
  auto add = [&](const ArgCase& c, Tensor x, DType index, const std::string& note) {
    const int64_t axis = c.axis;
    std::ostringstream params;
    params << "axis=" << axis << " index_dtype=" << index << note;
    out.push_back(Sample{axes_label(x.aval(), params.str()),
                         {x},
                         unary_fn([f, axis, index](const Tensor& t) { return f(t, axis, index); }),
                         {AbstractValue{c.out, index}}});
  };
  for (size_t i = 0; i < cases.size(); ++i)
    add(cases[i], random_tensor(cases[i].shape, dt, seed++), i % 2 ? i64 : i32, "");
  // Ties: values from {-1, 0, 1} (floats and integers), so the first occurrence must win.
  for (DType d : {dt, i32, i64})
    for (const ArgCase& c : {cases[3], cases[5], cases[6], cases[10], cases[11]})
      add(c, tie_tensor(c.shape, d, seed++), i32, " ties");
  // NaN is the extremum and the first NaN wins: several NaNs per row and per column.
  Tensor x = with_nans(random_tensor({4, 6}, dt, seed++), {2, 4, 7, 13, 15, 22});
  add({{4, 6}, 0, {6}}, x, i32, " with NaN");
  add({{4, 6}, 1, {4}}, x, i64, " with NaN");
  return out;
}

std::vector<BadInput> arg_bad(const std::string& name, ArgFn f) {
  return {
      bad<ShapeError>("empty axis", "[" + name + "] cannot take the " + name + " of an empty axis: axis 1 of f32[3,0]",
                      [f] {
                        f(zeros({3, 0}, f32), 1, i32);
                      }),
      bad<AxisError>("axis out of range", "[" + name + "] axis 2 is out of range for operand f64[3,4]",
                     [f] {
                       f(zeros({3, 4}, f64), 2, i32);
                     }),
      bad<AxisError>("rank-0 operand", "[" + name + "] axis 0 is out of range", [f] { f(zeros({}, f64), 0, i32); }),
      bad<DTypeError>("float index dtype", "[" + name + "] index_dtype must be i32 or i64, got f32",
                      [f] { f(zeros({3}, f64), 0, f32); }),
      bad<DTypeError>("bool operand", "[" + name + "] got an operand of type bool[3]",
                      [f] { f(zeros({3}, boolean), 0, i32); })};
}

// ---- cumsum ----

std::vector<Sample> cumsum_samples(DType dt) {
  struct CumCase {
    Shape shape;
    int64_t axis;
    bool reverse;
  };
  const std::vector<CumCase> cases{
      {{7}, 0, false},       {{7}, 0, true},       {{0}, 0, false},      {{1}, 0, true},        {{3, 4}, 0, false},
      {{3, 4}, 1, false},    {{3, 4}, 0, true},    {{3, 4}, 1, true},    {{2, 0, 3}, 1, false}, {{2, 0, 3}, 2, true},
      {{2, 3, 5}, 1, false}, {{2, 3, 5}, 2, true}, {{2, 3, 5}, 0, true}, {{4, 1, 6}, 1, false}, {{5, 24}, 1, false},
      {{24, 5}, 0, true},    {{11, 7}, 1, false},  {{9, 5}, 1, true},
  };
  std::vector<Sample> out;
  uint64_t seed = 500;
  auto add = [&](const CumCase& c, Tensor x, const std::string& note) {
    const int64_t axis = c.axis;
    const bool reverse = c.reverse;
    std::ostringstream params;
    params << "axis=" << axis << " reverse=" << (reverse ? "True" : "False") << note;
    out.push_back(Sample{axes_label(x.aval(), params.str()),
                         {x},
                         unary_fn([axis, reverse](const Tensor& t) { return lax::cumsum(t, axis, reverse); }),
                         {x.aval()}});
  };
  for (const CumCase& c : cases) add(c, random_tensor(c.shape, dt, seed++), "");
  for (const CumCase& c : {CumCase{{4, 200}, 1, false}, CumCase{{150, 3}, 0, true}, CumCase{{2, 100, 3}, 1, false},
                           CumCase{{10, 150}, 1, true}})
    add(c, grid_tensor(c.shape, dt, seed++), " (grid)");
  for (DType d : {i32, i64})
    for (const CumCase& c : {cases[1], cases[5], cases[11], cases[12]})
      add(c, random_tensor(c.shape, d, seed++, -9, 9), "");
  return out;
}

const bool registered = [] {
  register_samples("reduce_sum", {[](DType dt) { return reduce_samples(lax::reduce_sum, dt, -2, 2, true); },
                                  reduce_bad("reduce_sum", lax::reduce_sum)});
  for (auto [name, f] :
       {std::pair<const char*, ReduceFn>{"reduce_max", lax::reduce_max}, {"reduce_min", lax::reduce_min}})
    register_samples(name, {[f = f](DType dt) {
                              std::vector<Sample> s = reduce_samples(f, dt, -2, 2, true, /*grid_ties=*/true);
                              for (Sample& n : nan_samples(f, dt)) s.push_back(std::move(n));
                              return s;
                            },
                            reduce_bad(name, f)});
  // Products stay O(1) with factors in [0.6, 1.6]; one signed sample; no long products.
  register_samples("reduce_prod",
                   {[](DType dt) {
                      std::vector<Sample> s = reduce_samples(lax::reduce_prod, dt, 0.6, 1.6, false);
                      Tensor x = random_tensor({3, 8}, dt, 42, -2, 2);
                      s.push_back(Sample{"signed factors",
                                         {x},
                                         unary_fn([](const Tensor& t) { return lax::reduce_prod(t, {1}); }),
                                         {AbstractValue{{3}, dt}}});
                      // Exact zeros (one in rows 0, 2, 3, two in row 1, column 2 all
                      // zeros): the derivative is the product of the other factors, never y / x.
                      Tensor z = with_zeros(random_tensor({4, 5}, dt, 43, 0.6, 1.6), {2, 5, 7, 12, 17});
                      for (const Axes& axes : {Axes{0}, Axes{1}, Axes{0, 1}})
                        s.push_back(Sample{axes_label(z.aval(), "axes=" + axes_str(axes) + " with zeros"),
                                           {z},
                                           unary_fn([axes](const Tensor& t) { return lax::reduce_prod(t, axes); }),
                                           {AbstractValue{drop(z.shape(), axes), dt}}});
                      return s;
                    },
                    reduce_bad("reduce_prod", lax::reduce_prod)});
  register_samples("argmax", {[](DType dt) { return arg_samples(lax::argmax, dt); }, arg_bad("argmax", lax::argmax)});
  register_samples("argmin", {[](DType dt) { return arg_samples(lax::argmin, dt); }, arg_bad("argmin", lax::argmin)});
  register_samples("cumsum",
                   {cumsum_samples,
                    {bad<AxisError>("axis out of range", "[cumsum] axis 2 is out of range for operand f32[3,4]",
                                    [] {
                                      lax::cumsum(zeros({3, 4}, f32), 2);
                                    }),
                     bad<AxisError>("rank-0 operand", "[cumsum] axis 0 is out of range for operand f64[]",
                                    [] { lax::cumsum(zeros({}, f64), 0); }),
                     bad<AxisError>("negative axis", "[cumsum] axis -1", [] { lax::cumsum(zeros({3}, f64), -1); }),
                     bad<DTypeError>("bool operand", "[cumsum] got an operand of type bool[3]",
                                     [] { lax::cumsum(zeros({3}, boolean), 0); })}});
  return true;
}();

}  // namespace reduction_samples
}  // namespace fluxion::testing
