// Reductions: reduce_sum reduce_max reduce_min reduce_prod over a set of axes, argmax argmin over
// one axis, and cumsum (inclusive prefix sum). Each reduction is one Op struct (Eigen functor for
// the CPU kernel, accumulator for the independent reference) plus one declaration.
//
// Semantics (XLA/JAX): axes are sorted, unique and in range; the output drops them. Reducing no
// axes returns the input. Reducing zero elements gives the identity: sum 0, prod 1, max -inf
// (lowest integer), min +inf (largest integer). reduce_max/min propagate NaN. argmax/argmin
// return the first extremum, NaN counting as the extremum (the first NaN wins); their axis must
// not be empty. Integer sums and products wrap modulo 2^bits.
//
// Rules: reduce_sum and cumsum are linear (transposes: broadcast back, cumsum the other way);
// reduce_max/min average the tangent over ties, like JAX; reduce_prod's jvp multiplies exclusive
// prefix and suffix products (no division, so zeros are fine); argmax/argmin have zero derivative.
// Batching renumbers the axes around the batch axis: no transposes, no loops.
#include <array>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include "backends/cpu/reduction.hpp"
#include "backends/reference/reduction.hpp"
#include "fluxion/lax.hpp"
#include "primitives/builder.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/reduction.hpp"
#include "primitives/registry.hpp"

namespace fluxion::primitives {
namespace reduction_family {

// Integer sums and products wrap: they accumulate in the unsigned type of the same width. Float
// sums, products and cumsums accumulate in double, pairwise (backends/cpu/accumulate.hpp). The
// reference sums and multiplies floats in extended precision (long double) and rounds once.
template <class T, class Float, bool = std::is_integral_v<T>> struct AccOf { using type = Float; };
template <class T, class Float> struct AccOf<T, Float, true> { using type = std::make_unsigned_t<T>; };
template <class T> using Wrapping = typename AccOf<T, T>::type;
template <class T> using Extended = typename AccOf<T, long double>::type;

struct Sum {
  static constexpr const char* name = "reduce_sum";
  template <class T> using Acc = Wrapping<T>;
  template <class A> static auto functor() { return Eigen::internal::scalar_sum_op<A, A>(); }
  template <class T> static T identity() { return T(0); }
  static constexpr bool kWide = true;
  template <class V> static V combine(V a, V b) { return a + b; }
  template <class T> using RefAcc = Extended<T>;
  template <class T> static RefAcc<T> ref_init() {  // IEEE addition's identity for floats: a sum of -0s is -0
    if constexpr (std::is_floating_point_v<T>) return RefAcc<T>(-0.0);
    else return RefAcc<T>(0);
  }
  template <class T> static RefAcc<T> ref_combine(RefAcc<T> a, T x) { return RefAcc<T>(a + static_cast<RefAcc<T>>(x)); }
};
struct Prod {
  static constexpr const char* name = "reduce_prod";
  template <class T> using Acc = Wrapping<T>;
  template <class A> static auto functor() { return Eigen::internal::scalar_product_op<A, A>(); }
  template <class T> static T identity() { return T(1); }
  static constexpr bool kWide = true;
  template <class V> static V combine(V a, V b) { return a * b; }
  template <class T> using RefAcc = Extended<T>;
  template <class T> static RefAcc<T> ref_init() { return RefAcc<T>(1); }
  template <class T> static RefAcc<T> ref_combine(RefAcc<T> a, T x) { return RefAcc<T>(a * static_cast<RefAcc<T>>(x)); }
};
struct Max {
  static constexpr const char* name = "reduce_max";
  template <class T> using Acc = T;
  template <class A> static auto functor() { return Eigen::internal::scalar_max_op<A, A, Eigen::PropagateNaN>(); }
  static constexpr bool kWide = false;  // exact in T
  template <class T> static T identity() {
    if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::lowest();
  }
  template <class T> using RefAcc = T;
  template <class T> static T ref_init() { return identity<T>(); }
  template <class T> static T ref_combine(T a, T x) {
    if (a != a) return a;  // NaN sticks
    return (x != x || a < x) ? x : a;
  }
};
struct Min {
  static constexpr const char* name = "reduce_min";
  template <class T> using Acc = T;
  template <class A> static auto functor() { return Eigen::internal::scalar_min_op<A, A, Eigen::PropagateNaN>(); }
  static constexpr bool kWide = false;
  template <class T> static T identity() {
    if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
    else return std::numeric_limits<T>::max();
  }
  template <class T> using RefAcc = T;
  template <class T> static T ref_init() { return identity<T>(); }
  template <class T> static T ref_combine(T a, T x) {
    if (a != a) return a;
    return (x != x || x < a) ? x : a;
  }
};

// ---- helpers of the family ----

// Axes must be strictly increasing and in [0, rank).
void check_axes(const Primitive& self, const AbstractValue& x, const std::vector<int64_t>& axes) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (x.ndim() == 0)
      detail::fail<AxisError>(self.name.c_str(), "axis ", axes[i], " is out of range for operand ", x,
                              ": a rank-0 operand has no axes. ",
                              self.name.rfind("arg", 0) == 0 ? "Give it at least one dim (fx::expand_dims)."
                                                             : "Reduce it over axes=() (the identity).");
    if (axes[i] < 0 || axes[i] >= x.ndim())
      detail::fail<AxisError>(self.name.c_str(), "axis ", axes[i], " is out of range for operand ", x, " of rank ",
                              x.ndim(), ". Use axes in [0, ", x.ndim(),
                              ") (lax takes non-negative axes; fx::sum and friends normalise negative ones).");
    if (i > 0 && axes[i] <= axes[i - 1]) {
      std::ostringstream os;
      detail::print_param(os, axes);
      detail::fail<AxisError>(self.name.c_str(), "axes ", os.str(), " for operand ", x,
                              " must be sorted and unique. Sort them and drop repeats.");
    }
  }
}

Shape drop_axes(const Shape& s, const std::vector<int64_t>& axes) {
  Shape out;
  for (int64_t d = 0, a = 0; d < s.size(); ++d) {
    if (a < static_cast<int64_t>(axes.size()) && axes[static_cast<size_t>(a)] == d) ++a;
    else out.push_back(s[d]);
  }
  return out;
}

// [outer, n, inner] extents around `axis`.
std::array<int64_t, 3> split_at(const Shape& s, int64_t axis) {
  std::array<int64_t, 3> r{1, s[axis], 1};
  for (int64_t d = 0; d < s.size(); ++d)
    if (d != axis) r[d < axis ? 0 : 2] *= s[d];
  return r;
}

// Axes of a rank-`rank` operand not in the sorted list `axes`.
std::vector<int64_t> kept_axes(int64_t rank, const std::vector<int64_t>& axes) {
  std::vector<int64_t> kept;
  for (int64_t d = 0, a = 0; d < rank; ++d) {
    if (a < static_cast<int64_t>(axes.size()) && axes[static_cast<size_t>(a)] == d) ++a;
    else kept.push_back(d);
  }
  return kept;
}

// `y` (reduced over `axes`) broadcast back to `shape`.
Tensor broadcast_back(const Tensor& y, const Shape& shape, const std::vector<int64_t>& axes) {
  return lax::broadcast_in_dim(y, shape, kept_axes(shape.size(), axes));
}

// Logical axes of an operand mapped along `bdim` -> physical axes (still sorted); also the batch
// axis of the reduced result.
std::vector<int64_t> physical_axes(const std::vector<int64_t>& axes, int64_t bdim, int64_t* out_dim) {
  std::vector<int64_t> phys;
  int64_t before = 0;
  for (int64_t a : axes) {
    phys.push_back(a >= bdim ? a + 1 : a);
    before += a < bdim;
  }
  *out_dim = bdim - before;
  return phys;
}

// ---- reduce_sum, reduce_max, reduce_min, reduce_prod: one shape rule, kernel and batching rule ----

std::vector<AbstractValue> reduce_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                             const Params& params) {
  check_arity(self, in, 1);
  check_dtype_in(self, in[0], kNumeric);
  const auto& axes = params.as<ReduceParams>().axes;
  check_axes(self, in[0], axes);
  return {AbstractValue{drop_axes(in[0].shape, axes), in[0].dtype}};
}

template <class Op, bool Reference>
void reduce_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& axes = params.as<ReduceParams>().axes;
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      if constexpr (Reference)
        reference::reduce<Op>(in[0].data<T>(), in[0].shape().dims(), axes, out[0].mutable_data<T>());
      else cpu::reduce<Op>(in[0].data<T>(), in[0].shape().dims(), axes, out[0].mutable_data<T>());
    }
  });
}

// Batching of reduce_*: reduce the shifted axes in place; the batch axis survives.
void reduce_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                  const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  int64_t od = 0;
  std::vector<int64_t> axes = physical_axes(params.as<ReduceParams>().axes, dims[0], &od);
  out = fluxion::bind(self, values, ReduceParams(std::move(axes)));
  out_dims = {od};
}

// reduce_sum is linear: its transpose broadcasts the cotangent back over the reduced axes.
void reduce_sum_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>&,
                          const std::vector<AbstractValue>& in_avals, const Params& params,
                          std::vector<Tensor>& cts_in) {
  if (!cts_out[0].defined()) return;
  const auto& axes = params.as<ReduceParams>().axes;
  cts_in[0] = axes.empty() ? cts_out[0] : broadcast_back(cts_out[0], in_avals[0].shape, axes);
}

const Primitive& reduce_sum_p() {
  static const Primitive& p = define_primitive(Sum::name)
                                  .params<ReduceParams>()
                                  .linear()
                                  .shape(&reduce_shape_rule)
                                  .reference(&reduce_kernel<Sum, true>)
                                  .cpu(&reduce_kernel<Sum, kLightKernels>)
                                  .jvp(&linear_jvp_rule)
                                  .transpose(&reduce_sum_transpose)
                                  .batch(&reduce_batch)
                                  .build();
  return p;
}

// reduce_max/min (like JAX): the tangent at the positions equal to the result, averaged over ties.
void reduce_chooser_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                        const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  const Tensor& x = primals[0];
  const auto& axes = params.as<ReduceParams>().axes;
  primals_out = fluxion::bind(self, primals, params);
  const Tensor& t = tangents[0];
  if (!t.defined() || axes.empty()) {  // axes=() is the identity
    tangents_out = {t};
    return;
  }
  Tensor mask = lax::convert_element_type(lax::eq(x, broadcast_back(primals_out[0], x.shape(), axes)), t.dtype());
  Tensor count = lax::reduce_sum(mask, axes);
  tangents_out = {lax::div(lax::reduce_sum(lax::mul(t, mask), axes), count)};
}

const Primitive& reduce_max_p() {
  static const Primitive& p = define_primitive(Max::name)
                                  .params<ReduceParams>()
                                  .shape(&reduce_shape_rule)
                                  .reference(&reduce_kernel<Max, true>)
                                  .cpu(&reduce_kernel<Max, kLightKernels>)
                                  .jvp(&reduce_chooser_jvp)
                                  .batch(&reduce_batch)
                                  .build();
  return p;
}

const Primitive& reduce_min_p() {
  static const Primitive& p = define_primitive(Min::name)
                                  .params<ReduceParams>()
                                  .shape(&reduce_shape_rule)
                                  .reference(&reduce_kernel<Min, true>)
                                  .cpu(&reduce_kernel<Min, kLightKernels>)
                                  .jvp(&reduce_chooser_jvp)
                                  .batch(&reduce_batch)
                                  .build();
  return p;
}

// `x` shifted by k >= 1 along its last axis (of size n > k), the vacated positions filled with
// `fill`: toward higher indices when `up`, else toward lower ones. Made of slice and pad.
Tensor shift_last(const Tensor& x, int64_t k, bool up, const Tensor& fill) {
  const int64_t rank = x.ndim(), n = x.shape()[rank - 1];
  std::vector<int64_t> start(static_cast<size_t>(rank), 0), limit = x.shape().dims();
  std::vector<int64_t> low(static_cast<size_t>(rank), 0), high(static_cast<size_t>(rank), 0),
      interior(static_cast<size_t>(rank), 0);
  if (up) {
    limit.back() = n - k;
    low.back() = k;
  } else {
    start.back() = k;
    high.back() = k;
  }
  return lax::pad(lax::slice(x, start, limit), fill, low, high, interior);
}

// Exclusive products along the last axis (prefix when `up`, suffix otherwise) by a log-step
// (Hillis-Steele) scan: only mul, slice and pad, so the result differentiates again.
Tensor exclusive_products(const Tensor& x, bool up) {
  const int64_t n = x.shape()[x.ndim() - 1];
  Tensor one = scalar_like(x, 1);
  Tensor s = shift_last(x, 1, up, one);
  for (int64_t k = 1; k < n - 1; k *= 2) s = lax::mul(s, shift_last(s, k, up, one));
  return s;
}

// reduce_prod without dividing by x (correct with zeros): with the reduced axes gathered into one
// trailing axis, d prod = sum(t * (product of the elements before) * (product of those after)).
void reduce_prod_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                     const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  const Tensor& x = primals[0];
  const auto& axes = params.as<ReduceParams>().axes;
  primals_out = fluxion::bind(self, primals, params);
  const Tensor& t = tangents[0];
  if (!t.defined() || axes.empty()) {
    tangents_out = {t};
    return;
  }
  std::vector<int64_t> perm = kept_axes(x.ndim(), axes);
  std::vector<int64_t> gathered;
  int64_t n = 1;
  for (int64_t d : perm) gathered.push_back(x.shape()[d]);
  for (int64_t a : axes) n *= x.shape()[a];
  gathered.push_back(n);
  perm.insert(perm.end(), axes.begin(), axes.end());
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == static_cast<int64_t>(i);
  auto gather_axes = [&](const Tensor& v) {
    return lax::reshape(identity ? v : lax::transpose(v, perm), Shape(gathered));
  };
  Tensor tg = gather_axes(t);
  const int64_t last = static_cast<int64_t>(gathered.size()) - 1;
  if (n <= 1) {  // nothing else to multiply by
    tangents_out = {lax::reduce_sum(tg, {last})};
    return;
  }
  Tensor xg = gather_axes(x);
  Tensor others = lax::mul(exclusive_products(xg, true), exclusive_products(xg, false));
  tangents_out = {lax::reduce_sum(lax::mul(tg, others), {last})};
}

const Primitive& reduce_prod_p() {
  static const Primitive& p = define_primitive(Prod::name)
                                  .params<ReduceParams>()
                                  .shape(&reduce_shape_rule)
                                  .reference(&reduce_kernel<Prod, true>)
                                  .cpu(&reduce_kernel<Prod, kLightKernels>)
                                  .jvp(&reduce_prod_jvp)
                                  .batch(&reduce_batch)
                                  .build();
  return p;
}

// ---- argmax, argmin ----

std::vector<AbstractValue> arg_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                          const Params& params) {
  check_arity(self, in, 1);
  check_dtype_in(self, in[0], kNumeric);
  const auto& p = params.as<ArgParams>();
  if (p.axes.size() != 1) {
    std::ostringstream os;
    detail::print_param(os, p.axes);
    detail::fail<AxisError>(self.name.c_str(), "takes exactly one axis, got axes=", os.str(), " for operand ", in[0],
                            ". Reduce one axis at a time (or reshape the axes into one).");
  }
  check_axes(self, in[0], p.axes);
  if (p.index_dtype != i32 && p.index_dtype != i64)
    detail::fail<DTypeError>(self.name.c_str(), "index_dtype must be i32 or i64, got ", p.index_dtype, ".");
  const int64_t n = in[0].shape[p.axes[0]];
  if (n == 0)
    detail::fail<ShapeError>(self.name.c_str(), "cannot take the ", self.name, " of an empty axis: axis ", p.axes[0],
                             " of ", in[0], " has size 0. Check the shape, or guard the call.");
  if (p.index_dtype == i32 && n - 1 > std::numeric_limits<int32_t>::max())
    detail::fail<ShapeError>(self.name.c_str(), "axis ", p.axes[0], " of ", in[0],
                             " is too long for i32 indices. Pass index_dtype=i64.");
  return {AbstractValue{drop_axes(in[0].shape, p.axes), p.index_dtype}};
}

template <bool IsMax, bool Reference>
void arg_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<ArgParams>();
  const int64_t axis = p.axes[0];
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      dispatch_dtype(p.index_dtype, [&](auto itag) {
        using I = typename decltype(itag)::type;
        if constexpr (std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>) {
          if constexpr (Reference) {
            reference::arg_reduce<IsMax>(in[0].data<T>(), in[0].shape().dims(), axis, out[0].mutable_data<I>());
          } else {
            auto [outer, n, inner] = split_at(in[0].shape(), axis);
            cpu::arg_reduce<IsMax>(in[0].data<T>(), outer, n, inner, out[0].mutable_data<I>());
          }
        }
      });
    }
  });
}

void arg_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
               const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<ArgParams>();
  int64_t od = 0;
  std::vector<int64_t> axes = physical_axes(p.axes, dims[0], &od);
  out = fluxion::bind(self, values, ArgParams(std::move(axes), p.index_dtype));
  out_dims = {od};
}

const Primitive& argmax_p() {
  static const Primitive& p = define_primitive("argmax")
                                  .params<ArgParams>()
                                  .shape(&arg_shape_rule)
                                  .reference(&arg_kernel<true, true>)
                                  .cpu(&arg_kernel<true, kLightKernels>)
                                  .jvp(&zero_jvp_rule)
                                  .batch(&arg_batch)
                                  .build();
  return p;
}

const Primitive& argmin_p() {
  static const Primitive& p = define_primitive("argmin")
                                  .params<ArgParams>()
                                  .shape(&arg_shape_rule)
                                  .reference(&arg_kernel<false, true>)
                                  .cpu(&arg_kernel<false, kLightKernels>)
                                  .jvp(&zero_jvp_rule)
                                  .batch(&arg_batch)
                                  .build();
  return p;
}

// ---- cumsum ----

std::vector<AbstractValue> cumsum_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                             const Params& params) {
  check_arity(self, in, 1);
  check_dtype_in(self, in[0], kNumeric);
  const auto& p = params.as<CumsumParams>();
  if (p.axis < 0 || p.axis >= in[0].ndim())
    detail::fail<AxisError>(self.name.c_str(), "axis ", p.axis, " is out of range for operand ", in[0], " of rank ",
                            in[0].ndim(), ". Use an axis in [0, ", in[0].ndim(), ").");
  return {in[0]};
}

template <bool Reference>
void cumsum_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<CumsumParams>();
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      if constexpr (Reference) {
        reference::cumsum<Extended<T>>(in[0].data<T>(), in[0].shape().dims(), p.axis, p.reverse,
                                       out[0].mutable_data<T>());
      } else {
        auto [outer, n, inner] = split_at(in[0].shape(), p.axis);
        using A = std::conditional_t<std::is_floating_point_v<T>, double, Wrapping<T>>;
        cpu::cumsum<A>(in[0].data<T>(), outer, n, inner, p.reverse, out[0].mutable_data<T>());
      }
    }
  });
}

// cumsum is linear: its transpose is the cumsum in the other direction.
void cumsum_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>&,
                      const std::vector<AbstractValue>&, const Params& params, std::vector<Tensor>& cts_in) {
  if (!cts_out[0].defined()) return;
  const auto& p = params.as<CumsumParams>();
  cts_in[0] = lax::cumsum(cts_out[0], p.axis, !p.reverse);
}

void cumsum_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                  const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<CumsumParams>();
  out = fluxion::bind(self, values, CumsumParams(p.axis >= dims[0] ? p.axis + 1 : p.axis, p.reverse));
  out_dims = {dims[0]};
}

const Primitive& cumsum_p() {
  static const Primitive& p = define_primitive("cumsum")
                                  .params<CumsumParams>()
                                  .linear()
                                  .shape(&cumsum_shape_rule)
                                  .reference(&cumsum_kernel<true>)
                                  .cpu(&cumsum_kernel<kLightKernels>)
                                  .jvp(&linear_jvp_rule)
                                  .transpose(&cumsum_transpose)
                                  .batch(&cumsum_batch)
                                  .build();
  return p;
}

}  // namespace reduction_family

void register_reduction(std::vector<const Primitive*>& list) {
  using namespace reduction_family;
  list.insert(list.end(), {&reduce_sum_p(), &reduce_max_p(), &reduce_min_p(), &reduce_prod_p(), &argmax_p(),
                           &argmin_p(), &cumsum_p()});
}

}  // namespace fluxion::primitives

namespace fluxion::lax {
Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& axes) {
  using namespace primitives::reduction_family;
  return bind1(reduce_sum_p(), {x}, ReduceParams(axes));
}
Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& axes) {
  using namespace primitives::reduction_family;
  return bind1(reduce_max_p(), {x}, ReduceParams(axes));
}
Tensor reduce_min(const Tensor& x, const std::vector<int64_t>& axes) {
  using namespace primitives::reduction_family;
  return bind1(reduce_min_p(), {x}, ReduceParams(axes));
}
Tensor reduce_prod(const Tensor& x, const std::vector<int64_t>& axes) {
  using namespace primitives::reduction_family;
  return bind1(reduce_prod_p(), {x}, ReduceParams(axes));
}
Tensor argmax(const Tensor& x, int64_t axis, DType index_dtype) {
  using namespace primitives::reduction_family;
  return bind1(argmax_p(), {x}, ArgParams({axis}, index_dtype));
}
Tensor argmin(const Tensor& x, int64_t axis, DType index_dtype) {
  using namespace primitives::reduction_family;
  return bind1(argmin_p(), {x}, ArgParams({axis}, index_dtype));
}
Tensor cumsum(const Tensor& x, int64_t axis, bool reverse) {
  using namespace primitives::reduction_family;
  return bind1(cumsum_p(), {x}, CumsumParams(axis, reverse));
}
}  // namespace fluxion::lax
