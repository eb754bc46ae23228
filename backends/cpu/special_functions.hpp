/// Vectorised special functions shared by the unary primitives' block kernels and the fused
/// tile programs (backends/cpu/tile_program.hpp), so both paths compute the same values.
#pragma once
#include <Eigen/Core>
#include <cmath>
#include <type_traits>

namespace fluxion::cpu {

/// exp with an exact 0 where the result underflows. Eigen's vectorised exp clamps its argument
/// (exp(-inf) would be ~1e-38 / ~1e-308, not 0), so lanes below `lowest` are cleared. Written as a
/// functor with a packet path because Eigen 3.4's `select` has none (a select expression runs one
/// scalar exp per element: 1.3x Eigen's exp with SSE2, 11x with AVX-512). NaN compares false and
/// stays NaN.
///
/// Eigen 3.4's f32 packet exp also clamps its argument at 88.376 and then scales by 2^128, which
/// is inf: every argument in [88.376, 88.723), whose result is finite, came out inf. Packets
/// holding an argument above kHigh take exp(x - 1) e there instead (x - 1 is exact for x >= 64;
/// beyond 88.723 the product overflows to inf as it should). One test per packet, |x| > kEdge,
/// sends the rare packets near either end to the guarded path; the others take Eigen's exp
/// alone (the two compares and selects on every packet made exp 1.25x Eigen's, bench W1).
template <class T> struct ExpFlushToZero {
  static constexpr T lowest = std::is_same_v<T, float> ? T(-87.0) : T(-708.0);
  static constexpr T kEdge = -lowest;
  static constexpr float kHigh = 88.0f;
  T operator()(T x) const { return x < lowest ? T(0) : std::exp(x); }
  template <class Packet> Packet packetOp(const Packet& x) const {
    namespace ei = Eigen::internal;
    if (!ei::predux_any(ei::pcmp_lt(ei::pset1<Packet>(kEdge), ei::pabs(x)))) return ei::pexp(x);
    Packet y;
    if constexpr (std::is_same_v<T, float>) {
      const Packet high = ei::pcmp_lt(ei::pset1<Packet>(kHigh), x);
      y = ei::pexp(ei::pselect(high, ei::psub(x, ei::pset1<Packet>(1.0f)), x));
      y = ei::pselect(high, ei::pmul(y, ei::pset1<Packet>(2.71828182845904523536f)), y);
    } else {
      y = ei::pexp(x);
    }
    return ei::pselect(ei::pcmp_lt(x, ei::pset1<Packet>(lowest)), ei::pzero(x), y);
  }
};
/// f64 tanh, vectorised (Eigen 3.4 vectorises tanh for f32 only; glibc's scalar tanh, through
/// expm1, cost ~30 ns per element here and dominated small-state integrators, bench W9).
/// |x| < 0.625: Lambert's continued fraction x / (1 + z / (3 + z / (5 + ...))), z = x², to 8
/// levels by the forward recurrence of its convergents A_j (denominator) and D_j = A_j - B_j, so
/// tanh x = x (1 - D/A) with D/A <= 0.13 (no division chain, no cancellation). Otherwise
/// sign(x) (1 - 2 / (exp(2|x|) + 1)). Measured at most 1.83 ulp from a long-double tanh over
/// 2M arguments (glibc: 2.16); NaN stays NaN, -0 stays -0, ±inf gives ±1.
template <class T> struct TanhF64 {
  static constexpr T kSmall = T(0.625);
  static constexpr int kLevels = 8;
  T operator()(T x) const {
    const T a = std::fabs(x);
    if (a < kSmall) {
      const T z = x * x;
      T a1 = 1, a0 = 1, d1 = 1, d0 = 0;  // A_{j-1}, A_j, D_{j-1}, D_j
      for (int j = 1; j <= kLevels; ++j) {
        const T b = T(2 * j + 1);
        const T a2 = std::fma(b, a0, z * a1), d2 = std::fma(b, d0, z * d1);
        a1 = a0, a0 = a2, d1 = d0, d0 = d2;
      }
      return x * (T(1) - d0 / a0);
    }
    if (a != a) return x;
    return std::copysign(T(1) - T(2) / (std::exp(a + a) + T(1)), x);
  }
  template <class Packet> Packet packetOp(const Packet& x) const {
    namespace ei = Eigen::internal;
    const Packet one = ei::pset1<Packet>(T(1)), z = ei::pmul(x, x);
    Packet a1 = one, a0 = one, d1 = one, d0 = ei::pzero(x);
    for (int j = 1; j <= kLevels; ++j) {
      const Packet b = ei::pset1<Packet>(T(2 * j + 1));
      const Packet a2 = ei::pmadd(b, a0, ei::pmul(z, a1)), d2 = ei::pmadd(b, d0, ei::pmul(z, d1));
      a1 = a0, a0 = a2, d1 = d0, d0 = d2;
    }
    const Packet small = ei::pmul(x, ei::psub(one, ei::pdiv(d0, a0)));
    const Packet a = ei::pabs(x);
    const Packet e = ei::pexp(ei::padd(a, a));
    Packet big = ei::psub(one, ei::pdiv(ei::pset1<Packet>(T(2)), ei::padd(e, one)));
    big = ei::pselect(ei::pcmp_lt(x, ei::pzero(x)), ei::pnegate(big), big);
    const Packet r = ei::pselect(ei::pcmp_lt(a, ei::pset1<Packet>(kSmall)), small, big);
    return ei::pselect(ei::pcmp_eq(x, x), r, x);  // NaN: x itself
  }
};
}  // namespace fluxion::cpu

namespace Eigen::internal {
template <class T> struct functor_traits<fluxion::cpu::ExpFlushToZero<T>> {
  enum {
    Cost = functor_traits<scalar_exp_op<T>>::Cost + 2 * NumTraits<T>::AddCost,
    PacketAccess = functor_traits<scalar_exp_op<T>>::PacketAccess,
  };
};
template <class T> struct functor_traits<fluxion::cpu::TanhF64<T>> {
  enum { Cost = functor_traits<scalar_exp_op<T>>::Cost + 30 * NumTraits<T>::MulCost, PacketAccess = packet_traits<T>::HasExp };
};
}  // namespace Eigen::internal
