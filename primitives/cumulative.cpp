// cumprod, cummax, cummin, cumlogsumexp: inclusive running combinations along one axis (from the end
// when `reverse`), like lax's primitives of the same names. The forward pass is one sequential scan per
// row (the CPU runs rows in parallel; f32 accumulates in double, the reference in long double). The
// jvp is, like JAX's, the jvp of the associative_scan composition: associative_scan over (value,
// tangent) pairs with the op's dual combination ((a, ta) (b, tb) -> (a b, ta b + a tb) for the product;
// max/min hand the tangent of the selected operand, half of each on ties, like fx::maximum; logaddexp
// weighs each tangent by exp(operand - result)), so derivatives at zeros and ties are the
// composition's and the tangent is linear in the input tangent (vjp transposes it). Batching shifts
// the axis. Integer inputs: cumprod wraps around, cummax/cummin exact; cumlogsumexp takes floats.
#include <algorithm>
#include <cmath>

#include "backends/cpu/kernel_threads.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"
#include "fluxion/sort.hpp"
#include "primitives/builder.hpp"
#include "primitives/cumulative.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/reduction.hpp"
#include "primitives/registry.hpp"

namespace fluxion::primitives::cumulative_detail {

using reduction_family::CumsumParams;

enum class Kind { prod, max, min, logsumexp };

template <Kind K> std::vector<AbstractValue> shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                                        const Params& params) {
  check_arity(self, in, 1);
  const char* name = self.name.c_str();
  if (in[0].dtype == boolean || (K == Kind::logsumexp && !is_floating(in[0].dtype)))
    detail::fail<DTypeError>(name, "does not take ", in[0], K == Kind::logsumexp ? "; it needs f32 or f64" : "",
                             ". Convert with fx::astype (the fx:: ops convert bool and integers for you).");
  const auto& p = params.as<CumsumParams>();
  if (p.axis < 0 || p.axis >= in[0].ndim())
    detail::fail<AxisError>(name, "axis ", p.axis, " is out of range for operand ", in[0], " of rank ", in[0].ndim(),
                            ". Use an axis in [0, ", in[0].ndim(), ").");
  return {in[0]};
}

template <Kind K> struct OpOf;
template <> struct OpOf<Kind::prod> { using type = Prod; };
template <> struct OpOf<Kind::max> { using type = Max; };
template <> struct OpOf<Kind::min> { using type = Min; };
template <> struct OpOf<Kind::logsumexp> { using type = LogAddExp; };

struct Rows {
  int64_t count, n, inner;
};
Rows rows_of(const Shape& s, int64_t axis) {
  Rows r{1, s[axis], 1};
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
    if (d != axis) r.count *= s[d];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(s.size()); ++d) r.inner *= s[d];
  return r;
}

// CPU: the shared row body, rows in parallel when there is enough work.
template <Kind K> void cpu_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<CumsumParams>();
  const Rows rows = rows_of(in[0].shape(), p.axis);
  if (rows.n == 0) return;
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kCumulativeApplies<typename OpOf<K>::type, T>) {
      const CumulativeRowBody<typename OpOf<K>::type, T> body{in[0].data<T>(), out[0].mutable_data<T>(), rows.n,
                                                              rows.inner, p.reverse};
      const bool parallel = static_cast<double>(rows.count) * static_cast<double>(rows.n) >= 1 << 16 && rows.count > 1;
      const int threads = parallel ? cpu::kernel_threads() : 1;
      cpu::parallel_ranges(rows.count, threads, 1, 1, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) body(r);
      });
    }
  });
}

// Reference: the plain sequential loop, floats in long double, rounded once per element.
template <Kind K> void reference_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<CumsumParams>();
  const Rows rows = rows_of(in[0].shape(), p.axis);
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (kCumulativeApplies<typename OpOf<K>::type, T>) {
      using A = std::conditional_t<std::is_floating_point_v<T>, long double, T>;
      const T* x = in[0].data<T>();
      T* y = out[0].mutable_data<T>();
      for (int64_t r = 0; r < rows.count; ++r) {
        A acc{};
        for (int64_t s = 0; s < rows.n; ++s) {
          const int64_t j = p.reverse ? rows.n - 1 - s : s;
          const int64_t at = ((r / rows.inner) * rows.n + j) * rows.inner + r % rows.inner;
          const A v = static_cast<A>(x[at]);
          acc = s == 0 ? v : OpOf<K>::type::apply(acc, v);
          y[at] = static_cast<T>(acc);
        }
      }
    }
  });
}

// ---- the jvp: associative_scan over (value, tangent) pairs ----

using Dual = std::pair<Tensor, Tensor>;

/// The tangent weight of `a` in max(a, b) (or min): 1 where a is selected strictly, 1/2 on ties.
Tensor selected_weight(const Tensor& a, const Tensor& b, bool is_max) {
  Tensor strict = is_max ? lax::gt(a, b) : lax::lt(a, b);
  return where(strict, 1.0, where(lax::eq(a, b), 0.5, zeros_like(a)));
}

template <Kind K> Dual combine(const Dual& a, const Dual& b) {
  if constexpr (K == Kind::prod) return {a.first * b.first, a.second * b.first + a.first * b.second};
  if constexpr (K == Kind::max || K == Kind::min) {
    Tensor wa = stop_gradient(selected_weight(a.first, b.first, K == Kind::max));
    Tensor wb = stop_gradient(selected_weight(b.first, a.first, K == Kind::max));
    return {K == Kind::max ? maximum(a.first, b.first) : minimum(a.first, b.first), a.second * wa + b.second * wb};
  }
  Tensor out = logaddexp(a.first, b.first);
  // exp(a - out) is NaN when both are -inf: no weight then (the value does not move).
  Tensor wa = exp(a.first - out), wb = exp(b.first - out);
  wa = where(isnan(wa), 0.0, wa);
  wb = where(isnan(wb), 0.0, wb);
  return {out, a.second * wa + b.second * wb};
}

template <Kind K> void jvp_rule(const Primitive& self, const std::vector<Tensor>& primals,
                                const std::vector<Tensor>& tangents, const Params& params,
                                std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out = {Tensor()};
  if (!tangents[0].defined() || !is_floating(primals[0].dtype())) return;
  const auto& p = params.as<CumsumParams>();
  Dual scanned = associative_scan(&combine<K>, Dual{primals[0], tangents[0]}, p.axis, p.reverse);
  tangents_out[0] = scanned.second;
}

void batch_rule(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<CumsumParams>();
  out = fluxion::bind(self, values, CumsumParams(p.axis >= dims[0] ? p.axis + 1 : p.axis, p.reverse));
  out_dims = {dims[0]};
}

template <Kind K> const Primitive& define(const char* name) {
  return define_primitive(name)
      .params<CumsumParams>()
      .shape(&shape_rule<K>)
      .reference(&reference_kernel<K>)
      .cpu(kLightKernels ? &reference_kernel<K> : &cpu_kernel<K>)
      .jvp(&jvp_rule<K>)
      .batch(&batch_rule)
      .build();
}

const Primitive& cumprod_p() {
  static const Primitive& p = define<Kind::prod>("cumprod");
  return p;
}
const Primitive& cummax_p() {
  static const Primitive& p = define<Kind::max>("cummax");
  return p;
}
const Primitive& cummin_p() {
  static const Primitive& p = define<Kind::min>("cummin");
  return p;
}
const Primitive& cumlogsumexp_p() {
  static const Primitive& p = define<Kind::logsumexp>("cumlogsumexp");
  return p;
}

}  // namespace fluxion::primitives::cumulative_detail

namespace fluxion::lax {
Tensor cumprod(const Tensor& x, int64_t axis, bool reverse) {
  namespace cd = primitives::cumulative_detail;
  return bind1(cd::cumprod_p(), {x}, cd::CumsumParams(axis, reverse));
}
Tensor cummax(const Tensor& x, int64_t axis, bool reverse) {
  namespace cd = primitives::cumulative_detail;
  return bind1(cd::cummax_p(), {x}, cd::CumsumParams(axis, reverse));
}
Tensor cummin(const Tensor& x, int64_t axis, bool reverse) {
  namespace cd = primitives::cumulative_detail;
  return bind1(cd::cummin_p(), {x}, cd::CumsumParams(axis, reverse));
}
Tensor cumlogsumexp(const Tensor& x, int64_t axis, bool reverse) {
  namespace cd = primitives::cumulative_detail;
  return bind1(cd::cumlogsumexp_p(), {x}, cd::CumsumParams(axis, reverse));
}
}  // namespace fluxion::lax
