/// Element types, their names and sizes, the promotion table and compile-time dispatch.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>

#include "fluxion/errors.hpp"
#include "fluxion/half.hpp"

namespace fluxion {

/// Element types. The codes are stable (saved files and hashes use them): f16 and bf16 came last.
/// Promotion is promote_types' table, not the order of the codes.
enum class DType : uint8_t { boolean = 0, i32 = 1, i64 = 2, f32 = 3, f64 = 4, f16 = 5, bf16 = 6 };

inline constexpr DType boolean = DType::boolean;
inline constexpr DType i32 = DType::i32;
inline constexpr DType i64 = DType::i64;
inline constexpr DType f32 = DType::f32;
inline constexpr DType f64 = DType::f64;
/// IEEE binary16 and bfloat16: stored in 16 bits (fluxion::float16_t, bfloat16_t), computed in f32.
inline constexpr DType f16 = DType::f16;
inline constexpr DType bf16 = DType::bf16;
inline constexpr int kNumDTypes = 7;

/// Short name used in avals and Jaxprs: "bool", "i32", "i64", "f32", "f64", "f16", "bf16".
const char* dtype_name(DType d);
/// Size of one element in bytes.
int64_t dtype_size(DType d);
inline bool is_half(DType d) { return d == f16 || d == bf16; }
inline bool is_floating(DType d) { return d == f32 || d == f64 || is_half(d); }
inline bool is_integer(DType d) { return d == i32 || d == i64; }
inline std::ostream& operator<<(std::ostream& os, DType d) { return os << dtype_name(d); }
/// The dtype half-precision values are computed in: f32 for f16 and bf16, `d` itself otherwise.
inline DType compute_dtype(DType d) { return is_half(d) ? f32 : d; }

/// The dtype of `a op b` for two tensors: their join in JAX's lattice bool < i32 < i64 < {f16, bf16} < f32 < f64
/// (integers with a half give the half; f16 with bf16 gives f32, the smallest type holding both).
inline DType promote_types(DType a, DType b) {
  // Rank in the lattice; f16 and bf16 share a rank and join at f32.
  constexpr int kRank[kNumDTypes] = {0, 1, 2, 4, 5, 3, 3};
  if (a == b) return a;
  const int ra = kRank[static_cast<int>(a)], rb = kRank[static_cast<int>(b)];
  if (ra == rb) return f32;  // f16 with bf16
  return ra < rb ? b : a;
}

/// A set of dtypes, used by shape rules to say which element types a primitive accepts.
struct DTypeSet {
  uint8_t bits = 0;
  constexpr bool contains(DType d) const { return (bits >> static_cast<int>(d)) & 1; }
  /// Human-readable list, e.g. "f32, f64".
  std::string describe() const;
};
inline constexpr DTypeSet kHalf{(1 << 5) | (1 << 6)};
inline constexpr DTypeSet kFloating{(1 << 3) | (1 << 4) | (1 << 5) | (1 << 6)};
inline constexpr DTypeSet kInteger{(1 << 1) | (1 << 2)};
inline constexpr DTypeSet kNumeric{(1 << 1) | (1 << 2) | (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6)};
inline constexpr DTypeSet kSigned = kNumeric;  // every numeric dtype here is signed
inline constexpr DTypeSet kIntegerOrBool{(1 << 0) | (1 << 1) | (1 << 2)};
inline constexpr DTypeSet kAny{0x7f};

/// C++ element type <-> DType.
template <class T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = boolean; };
template <> struct dtype_of<int32_t> { static constexpr DType value = i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = i64; };
template <> struct dtype_of<float> { static constexpr DType value = f32; };
template <> struct dtype_of<double> { static constexpr DType value = f64; };
template <> struct dtype_of<float16_t> { static constexpr DType value = f16; };
template <> struct dtype_of<bfloat16_t> { static constexpr DType value = bf16; };
template <class T> inline constexpr DType dtype_of_v = dtype_of<T>::value;

template <class T> struct TypeTag { using type = T; };

namespace detail {
[[noreturn]] void fail_half_kernel_dispatch(DType d);
[[noreturn]] void fail_unknown_dtype(DType d);
}  // namespace detail

/// Calls f(TypeTag<T>{}) with T the C++ type of `d`. Kernels use it to instantiate per dtype: the
/// computing dtypes only. f16/bf16 values never reach a kernel (eval_primitive and the widen_half pass
/// run their equations in f32), so a half dtype here is an internal error, not a silent instantiation.
template <class F> decltype(auto) dispatch_dtype(DType d, F&& f) {
  switch (d) {
    case DType::boolean: return f(TypeTag<bool>{});
    case DType::i32: return f(TypeTag<int32_t>{});
    case DType::i64: return f(TypeTag<int64_t>{});
    case DType::f32: return f(TypeTag<float>{});
    case DType::f64: return f(TypeTag<double>{});
    case DType::f16:
    case DType::bf16: detail::fail_half_kernel_dispatch(d);
  }
  detail::fail_unknown_dtype(d);
}

/// dispatch_dtype over every storage type, float16_t and bfloat16_t included: for code that moves,
/// creates, reads or prints elements (arithmetic on the half types goes through float).
template <class F> decltype(auto) dispatch_storage_dtype(DType d, F&& f) {
  switch (d) {
    case DType::f16: return f(TypeTag<float16_t>{});
    case DType::bf16: return f(TypeTag<bfloat16_t>{});
    default: return dispatch_dtype(d, std::forward<F>(f));
  }
}

}  // namespace fluxion
