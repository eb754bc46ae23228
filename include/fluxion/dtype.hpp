/// Element types, their names and sizes, the promotion table and compile-time dispatch.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <type_traits>

#include "fluxion/errors.hpp"

namespace fluxion {

/// Element types, ordered by the promotion lattice bool < i32 < i64 < f32 < f64 (JAX's, for this set).
enum class DType : uint8_t { boolean = 0, i32 = 1, i64 = 2, f32 = 3, f64 = 4 };

inline constexpr DType boolean = DType::boolean;
inline constexpr DType i32 = DType::i32;
inline constexpr DType i64 = DType::i64;
inline constexpr DType f32 = DType::f32;
inline constexpr DType f64 = DType::f64;
inline constexpr int kNumDTypes = 5;

/// Short name used in avals and Jaxprs: "bool", "i32", "i64", "f32", "f64".
const char* dtype_name(DType d);
/// Size of one element in bytes.
int64_t dtype_size(DType d);
inline bool is_floating(DType d) { return d == f32 || d == f64; }
inline bool is_integer(DType d) { return d == i32 || d == i64; }
inline std::ostream& operator<<(std::ostream& os, DType d) { return os << dtype_name(d); }

/// The dtype of `a op b` for two tensors: the larger of the two in the lattice.
inline DType promote_types(DType a, DType b) { return a < b ? b : a; }

/// A set of dtypes, used by shape rules to say which element types a primitive accepts.
struct DTypeSet {
  uint8_t bits = 0;
  constexpr bool contains(DType d) const { return (bits >> static_cast<int>(d)) & 1; }
  /// Human-readable list, e.g. "f32, f64".
  std::string describe() const;
};
inline constexpr DTypeSet kFloating{(1 << 3) | (1 << 4)};
inline constexpr DTypeSet kInteger{(1 << 1) | (1 << 2)};
inline constexpr DTypeSet kNumeric{(1 << 1) | (1 << 2) | (1 << 3) | (1 << 4)};
inline constexpr DTypeSet kSigned = kNumeric;  // every numeric dtype here is signed
inline constexpr DTypeSet kIntegerOrBool{(1 << 0) | (1 << 1) | (1 << 2)};
inline constexpr DTypeSet kAny{0x1f};

/// C++ element type <-> DType.
template <class T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = boolean; };
template <> struct dtype_of<int32_t> { static constexpr DType value = i32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = i64; };
template <> struct dtype_of<float> { static constexpr DType value = f32; };
template <> struct dtype_of<double> { static constexpr DType value = f64; };
template <class T> inline constexpr DType dtype_of_v = dtype_of<T>::value;

template <class T> struct TypeTag { using type = T; };

/// Calls f(TypeTag<T>{}) with T the C++ type of `d`. Kernels use it to instantiate per dtype.
template <class F> decltype(auto) dispatch_dtype(DType d, F&& f) {
  switch (d) {
    case DType::boolean: return f(TypeTag<bool>{});
    case DType::i32: return f(TypeTag<int32_t>{});
    case DType::i64: return f(TypeTag<int64_t>{});
    case DType::f32: return f(TypeTag<float>{});
    case DType::f64: return f(TypeTag<double>{});
  }
  detail::fail<DTypeError>("dtype", "unknown dtype code ", static_cast<int>(d), ".");
}

}  // namespace fluxion
