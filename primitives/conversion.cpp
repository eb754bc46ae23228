// Conversion primitives: select (elementwise pred ? on_true : on_false) and convert_element_type
// (any dtype to any dtype; float -> int saturates and maps NaN to 0, like detail::convert_scalar).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/cpu/elementwise.hpp"
#include "fluxion/lax.hpp"
#include "primitives/conversion.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/registry.hpp"
#include "primitives/scalar_functions.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives {
namespace conversion_family {

// ---- select ----

std::vector<AbstractValue> select_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                             const Params&) {
  check_arity(self, in, 3);
  const AbstractValue &pred = in[0], &on_true = in[1], &on_false = in[2];
  const char* name = self.name.c_str();
  if (pred.dtype != boolean)
    detail::fail<DTypeError>(name, "pred must be bool, got ", pred,
                             ". Compare first (fx::lt, fx::eq, ...) or convert it with fx::astype(pred, fx::boolean).");
  if (on_true.dtype != on_false.dtype)
    detail::fail<DTypeError>(name, "on_true and on_false dtypes differ: ", on_true, " and ", on_false,
                             ". Convert one with fx::astype (fx::where promotes automatically).");
  if (on_true.shape != on_false.shape)
    detail::fail<ShapeError>(name, "on_true and on_false shapes differ: ", on_true, " and ", on_false,
                             ". The primitive needs equal shapes; use fx::where, which broadcasts.");
  if (pred.ndim() != 0 && pred.shape != on_true.shape)
    detail::fail<ShapeError>(name, "pred ", pred, " must have the operands' shape ", on_true.shape,
                             " or be rank 0. Use fx::where, which broadcasts.");
  return {on_true};
}

#if !FLUXION_LIGHT_KERNELS  // else the CPU slot takes the reference kernels (config.hpp)
// The CPU kernel: Eigen's select, or a whole-array copy when pred is rank 0.
void select_cpu_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  dispatch_dtype(in[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int64_t n = out[0].size();
    cpu::MutableArrayMap<T> y(out[0].mutable_data<T>(), n);
    cpu::ArrayMap<T> a(in[1].data<T>(), n), b(in[2].data<T>(), n);
    if (in[0].ndim() == 0 && n != 1) {
      if (in[0].data<bool>()[0]) y = a;
      else y = b;
    } else {
      y = cpu::ArrayMap<bool>(in[0].data<bool>(), n).select(a, b);
    }
  });
}
#endif

// The reference kernel: a plain loop; a rank-0 pred has stride 0.
void select_reference_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  dispatch_dtype(in[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const bool* p = in[0].data<bool>();
    const T* a = in[1].data<T>();
    const T* b = in[2].data<T>();
    const int64_t sp = in[0].ndim() == 0 ? 0 : 1;
    T* y = out[0].mutable_data<T>();
    for (int64_t i = 0, n = out[0].size(); i < n; ++i) {
      if (p[i * sp]) y[i] = a[i];
      else y[i] = b[i];
    }
  });
}

// ---- convert_element_type ----

std::vector<AbstractValue> convert_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                              const Params& params) {
  check_arity(self, in, 1);
  const DType to = params.as<ConvertElementTypeParams>().new_dtype;
  if (static_cast<int>(to) >= kNumDTypes)
    detail::fail<DTypeError>(self.name.c_str(), "new_dtype has the unknown dtype code ", static_cast<int>(to),
                             ". Pass one of fx::boolean, fx::i32, fx::i64, fx::f32, fx::f64, fx::f16, fx::bf16.");
  return {AbstractValue{in[0].shape, to}};
}

// Conversions to or from f16/bf16, n elements: a plain loop over the shared functor, halves read as their exact
// float and written by one rounding (round to nearest even) from the source value (fluxion/half.hpp).
void convert_half_elements(const void* in, DType from, void* out, DType to, int64_t n) {
  dispatch_storage_dtype(from, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    dispatch_storage_dtype(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* x = static_cast<const From*>(in);
      To* y = static_cast<To*>(out);
      for (int64_t i = 0; i < n; ++i) y[i] = scalar_functions::ConvertElementType<To>::apply(to_compute(x[i]));
    });
  });
}

#if !FLUXION_LIGHT_KERNELS
// Float -> integer with Eigen: NaN -> 0, clamp into the range where the cast is exact and defined,
// and saturate values at or above From(max) (which may round up past max, e.g. f32(2^31-1) = 2^31).
template <class To, class From, class In, class Out> void saturating_float_to_int(const In& x, Out& y) {
  const From lo = static_cast<From>(std::numeric_limits<To>::min());  // a power of two: exact
  const From top = static_cast<From>(std::numeric_limits<To>::max());
  // The largest From below 2^(bits-1): top itself when exact, else the float just below it.
  const From hi = static_cast<long double>(top) > static_cast<long double>(std::numeric_limits<To>::max())
                      ? std::nextafter(top, From(0))
                      : top;
  y = (x >= top).select(std::numeric_limits<To>::max(),
                        (x == x).select(x, From(0)).max(lo).min(hi).template cast<To>());
}

// n elements from -> to; Align: Eigen::Aligned64 for whole tensors, Eigen::Unaligned for blocks.
template <int Align> void convert_elements(const void* in, DType from, void* out, DType to, int64_t n) {
  dispatch_dtype(from, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    dispatch_dtype(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      Eigen::Map<const Eigen::Array<From, Eigen::Dynamic, 1>, Align> x(static_cast<const From*>(in), n);
      Eigen::Map<Eigen::Array<To, Eigen::Dynamic, 1>, Align> y(static_cast<To*>(out), n);
      if constexpr (std::is_same_v<To, From>) {
        y = x;
      } else if constexpr (std::is_same_v<To, bool>) {
        y = x != From(0);
      } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
        saturating_float_to_int<To, From>(x, y);
      } else if constexpr (std::is_same_v<From, bool>) {
        // Masks to numbers (relu derivatives): Eigen 3.4 has no packet cast from bool and runs
        // this one element at a time; the bytes (0 or 1) widened in a plain loop vectorise.
        const auto* bytes = static_cast<const uint8_t*>(in);
        To* dst = static_cast<To*>(out);
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<To>(bytes[i]);
      } else {
        y = x.template cast<To>();
      }
    });
  });
}

void convert_cpu_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const DType from = in[0].dtype(), to = params.as<ConvertElementTypeParams>().new_dtype;
  if (is_half(from) || is_half(to)) {
    convert_half_elements(in[0].array("convert_element_type").data(), from, out[0].array("convert_element_type").data(),
                          to, in[0].size());
    return;
  }
  convert_elements<Eigen::Aligned64>(in[0].array("convert_element_type").data(), in[0].dtype(),
                                     out[0].array("convert_element_type").data(),
                                     params.as<ConvertElementTypeParams>().new_dtype, in[0].size());
}
#endif

// The block kernel of fused steps (cpu::BlockKernel): the CPU kernel's conversion over a block; a
// scalar input is converted once (by the shared functor, primitives/scalar_functions.hpp) and fills
// the block.
void convert_block(DType from, const void* const* in, const bool* scalar, void* out, int64_t n, DType to) {
  if (is_half(from) || is_half(to)) {
    convert_half_elements(in[0], from, out, to, scalar[0] ? 1 : n);
    if (scalar[0])
      dispatch_storage_dtype(to, [&](auto tag) {
        using To = typename decltype(tag)::type;
        std::fill(static_cast<To*>(out) + 1, static_cast<To*>(out) + n, static_cast<To*>(out)[0]);
      });
    return;
  }
  if (scalar[0] || kLightKernels) {
    dispatch_dtype(from, [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      dispatch_dtype(to, [&](auto to_tag) {
        using To = typename decltype(to_tag)::type;
        const From* x = static_cast<const From*>(in[0]);
        To* y = static_cast<To*>(out);
        using Convert = scalar_functions::ConvertElementType<To>;
        if (scalar[0]) std::fill(y, y + n, Convert::apply(x[0]));
        else
          for (int64_t i = 0; i < n; ++i) y[i] = Convert::apply(x[i]);
      });
    });
    return;
  }
#if !FLUXION_LIGHT_KERNELS
  convert_elements<Eigen::Unaligned>(in[0], from, out, to, n);
#endif
}

// The reference kernel: a plain loop over the scalar conversion rules of the Tensor API.
void convert_reference_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const DType to = params.as<ConvertElementTypeParams>().new_dtype;
  dispatch_storage_dtype(in[0].dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    dispatch_storage_dtype(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* x = in[0].data<From>();
      To* y = out[0].mutable_data<To>();
      for (int64_t i = 0, n = in[0].size(); i < n; ++i) y[i] = detail::convert_scalar<To>(x[i]);
    });
  });
}

// ---- rules ----
// Written with lax ops (run under the parent interpreter, differentiated again for higher
// derivatives). Undefined tangents/cotangents are symbolic zeros.

// select is linear in on_true and on_false: the tangent selects the tangents (a zero one
// instantiated only when the other is nonzero).
void select_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out.assign(1, Tensor());
  Tensor ta = tangents[1], tb = tangents[2];
  if (!ta.defined() && !tb.defined()) return;
  if (!ta.defined()) ta = zeros(primals[1].shape(), primals[1].dtype());
  if (!tb.defined()) tb = zeros(primals[2].shape(), primals[2].dtype());
  tangents_out[0] = lax::select(primals[0], ta, tb);
}

// The cotangent goes to the selected operand; pred is a known value.
void select_transpose(const Primitive& self, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                      const std::vector<AbstractValue>&, const Params&, std::vector<Tensor>& cts_in) {
  if (!inputs[0].defined())
    detail::fail<Error>(self.name.c_str(), "internal: transpose in pred, in which select is not linear.");
  const Tensor& ct = cts_out[0];
  if (!ct.defined()) return;
  Tensor zero = zeros(ct.shape(), ct.dtype());
  if (!inputs[1].defined()) cts_in[1] = lax::select(inputs[0], ct, zero);
  if (!inputs[2].defined()) cts_in[2] = lax::select(inputs[0], zero, ct);
}

// Like elementwise_batch_rule, but on_true and on_false are always given the batch axis (select
// does not broadcast them); an unmapped rank-0 pred stays rank 0.
void select_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                  const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const int64_t size = batching::batch_size(values, dims);
  std::vector<int64_t> batched = values[1].shape().dims();  // the operands' unbatched shape
  if (dims[1] != kNotMapped) batched.erase(batched.begin() + dims[1]);
  batched.insert(batched.begin(), size);
  Tensor pred = values[0];
  if (dims[0] != kNotMapped || pred.ndim() != 0) {
    pred = batching::materialize(pred, dims[0], size, 0);
    if (pred.ndim() == 1 && batched.size() > 1) pred = lax::broadcast_in_dim(pred, Shape(batched), {0});
  }
  Tensor a = batching::materialize(values[1], dims[1], size, 0);
  Tensor b = batching::materialize(values[2], dims[2], size, 0);
  out = fluxion::bind(self, {pred, a, b}, params);
  out_dims.assign(1, 0);
}

// float -> float is linear: the tangent is converted; to or from integers and bool the
// derivative is zero.
bool converts_floats(DType from, DType to) { return is_floating(from) && is_floating(to); }

void convert_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                 const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out.assign(1, Tensor());
  const DType to = params.as<ConvertElementTypeParams>().new_dtype;
  if (tangents[0].defined() && converts_floats(primals[0].dtype(), to))
    tangents_out[0] = fluxion::bind1(self, {tangents[0]}, params);
}

// The cotangent converted back to the input dtype (zero when either side is not floating).
void convert_transpose(const Primitive&, const std::vector<Tensor>& cts_out, const std::vector<Tensor>&,
                       const std::vector<AbstractValue>& in_avals, const Params& params, std::vector<Tensor>& cts_in) {
  const DType to = params.as<ConvertElementTypeParams>().new_dtype;
  if (!cts_out[0].defined() || !converts_floats(in_avals[0].dtype, to)) return;
  cts_in[0] = lax::convert_element_type(cts_out[0], in_avals[0].dtype);
}

#if FLUXION_LIGHT_KERNELS
constexpr Kernel kSelectCpu = &select_reference_kernel;
constexpr Kernel kConvertCpu = &convert_reference_kernel;
#else
constexpr Kernel kSelectCpu = &select_cpu_kernel;
constexpr Kernel kConvertCpu = &convert_cpu_kernel;
#endif

const Primitive& select_p() {
  static const Primitive& p = define_primitive("select")
                                  .elementwise()
                                  .linear()  // in on_true and on_false (pred is bool)
                                  .shape(&select_shape_rule)
                                  .reference(&select_reference_kernel)
                                  .cpu(kSelectCpu)
                                  .jvp(&select_jvp)
                                  .transpose(&select_transpose)
                                  .batch(&select_batch)
                                  .build();
  return p;
}

const Primitive& convert_element_type_p() {
  static const Primitive& p = define_primitive("convert_element_type")
                                  .params<ConvertElementTypeParams>()
                                  .elementwise()  // linear only float -> float, so not marked linear
                                  .shape(&convert_shape_rule)
                                  .reference(&convert_reference_kernel)
                                  .cpu(kConvertCpu)
                                  .cpu_lowering({&convert_block})
                                  .jvp(&convert_jvp)
                                  .transpose(&convert_transpose)
                                  .batch(&elementwise_batch_rule)
                                  .build();
  return p;
}

}  // namespace conversion_family

void register_conversion(std::vector<const Primitive*>& list) {
  list.insert(list.end(), {&conversion_family::select_p(), &conversion_family::convert_element_type_p()});
}

}  // namespace fluxion::primitives

namespace fluxion::lax {
Tensor select(const Tensor& pred, const Tensor& on_true, const Tensor& on_false) {
  return fluxion::bind1(fluxion::primitives::conversion_family::select_p(), {pred, on_true, on_false});
}
Tensor convert_element_type(const Tensor& x, DType dtype) {
  return fluxion::bind1(fluxion::primitives::conversion_family::convert_element_type_p(), {x},
                        fluxion::primitives::conversion_family::ConvertElementTypeParams(dtype));
}
}  // namespace fluxion::lax
