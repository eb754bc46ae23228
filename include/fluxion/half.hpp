/// 16-bit floating storage types (IEEE binary16 and bfloat16) and their exact conversions.
// Usable from host and device code (no Fluxion dependencies): values are stored in 16 bits and
// computed in f32. Conversions to float are exact; conversions from float and double round to
// nearest, ties to even, in one step (no double rounding through f32), overflow to ±Inf, keep
// ±Inf, give quiet NaNs for NaNs (sign and the top payload bits kept) and produce subnormals.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define FLUXION_HALF_HD __host__ __device__
#else
#define FLUXION_HALF_HD
#endif

namespace fluxion {
namespace half_detail {

/// A binary floating format with `ExpBits` exponent bits and `ManBits` stored mantissa bits in 16 bits.
template <int ExpBits, int ManBits> struct Format {
  static_assert(1 + ExpBits + ManBits == 16, "a 16-bit format");
  static constexpr int kBias = (1 << (ExpBits - 1)) - 1;
  static constexpr int kMinExp = 1 - kBias;  // exponent of the smallest normal
  static constexpr uint32_t kExpMask = (1u << ExpBits) - 1;
  static constexpr uint32_t kManMask = (1u << ManBits) - 1;

  /// round(sig / 2^shift) to nearest, ties to even (shift in [1, 63]).
  FLUXION_HALF_HD static uint64_t round_shift(uint64_t sig, int shift) {
    const uint64_t q = sig >> shift, r = sig & ((uint64_t(1) << shift) - 1), half = uint64_t(1) << (shift - 1);
    return (r > half || (r == half && (q & 1))) ? q + 1 : q;
  }

  /// The nearest value of this format to `d` (every float is a double exactly, so floats go through here too).
  FLUXION_HALF_HD static uint16_t from_double(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    const uint32_t sign = static_cast<uint32_t>(bits >> 63) << 15;
    const int exp = static_cast<int>((bits >> 52) & 0x7ff);
    const uint64_t man = bits & ((uint64_t(1) << 52) - 1);
    if (exp == 0x7ff) {  // Inf, or NaN made quiet with the top payload bits kept
      if (man == 0) return static_cast<uint16_t>(sign | (kExpMask << ManBits));
      const uint32_t payload = static_cast<uint32_t>(man >> (52 - ManBits)) & kManMask;
      return static_cast<uint16_t>(sign | (kExpMask << ManBits) | (1u << (ManBits - 1)) | payload);
    }
    if (exp == 0) return static_cast<uint16_t>(sign);  // |d| < 2^-1022 rounds to a signed zero here
    const int e = exp - 1023;
    const uint64_t sig = (uint64_t(1) << 52) | man;  // d = sig * 2^(e - 52)
    if (e >= kMinExp) {
      uint64_t rounded = round_shift(sig, 52 - ManBits);  // in [2^ManBits, 2^(ManBits+1)]
      int biased = e + kBias;
      if (rounded >> (ManBits + 1)) rounded >>= 1, ++biased;  // rounded up to the next power of two
      if (biased >= static_cast<int>(kExpMask)) return static_cast<uint16_t>(sign | (kExpMask << ManBits));
      return static_cast<uint16_t>(sign | (static_cast<uint32_t>(biased) << ManBits) |
                                   (static_cast<uint32_t>(rounded) & kManMask));
    }
    // Subnormal: units of 2^(kMinExp - ManBits). A carry into bit ManBits is the smallest normal's encoding.
    const int shift = (52 - ManBits) + (kMinExp - e);
    if (shift > 60) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(round_shift(sig, shift)));
  }

  /// The exact float value of `h`.
  FLUXION_HALF_HD static float to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h >> 15) << 31;
    const uint32_t exp = (h >> ManBits) & kExpMask, man = h & kManMask;
    uint32_t bits;
    if (exp == kExpMask) {
      bits = sign | 0x7f800000u | (man << (23 - ManBits));  // NaN payloads (quiet bit included) move up
    } else if (exp != 0) {
      bits = sign | ((exp - kBias + 127) << 23) | (man << (23 - ManBits));
    } else if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise the mantissa (float's range holds every such value as a normal or subnormal)
      int e = kMinExp;
      uint32_t m = man;
      while (!(m & (1u << ManBits))) m <<= 1, --e;
      const int biased = e + 127;
      if (biased > 0) {
        bits = sign | (static_cast<uint32_t>(biased) << 23) | ((m & kManMask) << (23 - ManBits));
      } else {  // only bfloat16 subnormals land in float's subnormals: same bits, shifted
        bits = sign | (static_cast<uint32_t>(h & 0x7fff) << 16);
      }
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
};

using Binary16 = Format<5, 10>;
using BFloat16 = Format<8, 7>;

/// The storage struct shared by both formats: 16 bits, explicit conversions to and from numbers.
template <class Fmt, class Self> struct Storage16 {
  uint16_t bits = 0;

  Storage16() = default;
  /// Rounds `v` to the nearest value (ties to even); integers go through double.
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>> FLUXION_HALF_HD explicit Storage16(T v)
      : bits(Fmt::from_double(static_cast<double>(v))) {}
  FLUXION_HALF_HD static Self from_bits(uint16_t b) {
    Self s;
    s.bits = b;
    return s;
  }
  FLUXION_HALF_HD float to_float() const { return Fmt::to_float(bits); }
  /// The exact value, converted on to T as float converts (callers saturate integer conversions).
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>> FLUXION_HALF_HD explicit operator T() const {
    return static_cast<T>(to_float());
  }
};

}  // namespace half_detail

/// IEEE 754 binary16 (fx::f16): 5 exponent bits, 10 mantissa bits, largest finite 65504.
struct float16_t : half_detail::Storage16<half_detail::Binary16, float16_t> {
  using Storage16::Storage16;
  float16_t() = default;
};
/// bfloat16 (fx::bf16): float's 8 exponent bits with 7 mantissa bits.
struct bfloat16_t : half_detail::Storage16<half_detail::BFloat16, bfloat16_t> {
  using Storage16::Storage16;
  bfloat16_t() = default;
};

/// True for the 16-bit floating storage types.
template <class T> inline constexpr bool is_half_storage_v =
    std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

/// The type arithmetic on T runs in: float for the 16-bit storage types, T otherwise.
template <class T> using compute_type_t = std::conditional_t<is_half_storage_v<T>, float, T>;

/// `v` as the type arithmetic on it runs in (exact: a half becomes the float of equal value).
template <class T> FLUXION_HALF_HD compute_type_t<T> to_compute(T v) {
  if constexpr (is_half_storage_v<T>) return v.to_float();
  else return v;
}

}  // namespace fluxion
