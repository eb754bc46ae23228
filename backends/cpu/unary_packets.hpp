/// The floating-point unary primitives as packet functions, and their one-value form: lane 0 of
/// the function applied to a broadcast packet. Eigen's vector body, its scalar tail (and head, for
/// unaligned blocks), small blocks, broadcast operands, fused tile programs and constant folding
/// all give the same bits for the same value, so eager and jit agree bit for bit wherever an
/// element falls.
///
/// An operation struct F provides
///   template <class S> static constexpr bool kVector;  // a packet form exists for scalar S
///   template <class P> static P packet(const P& x);   // used where kVector<S>
///   template <class S> static S one(S x);             // used where !kVector<S> (a libm call)
/// Special values follow the C library: correctly rounded operations (neg, sqrt, rsqrt's parts,
/// floor, ceil, round, rint, sign) give its bits, including for ±0, ±inf, NaN and subnormals;
/// the others its special-value class (inf, NaN, ±0 with sign) within their ulp bounds
/// (tests/test_special_values.cpp). Eigen 3.4's own forms are not used where they differ:
/// pnegate computes 0 - x (neg(+0) = +0), its fast-math psqrt is rsqrt plus a Newton step
/// (sqrt(inf) = NaN, subnormals 0, not correctly rounded), plog clamps subnormal arguments, psign
/// maps -0 to +0 and NaN to 0, and the float logistic does not reach 0 at -inf.
#pragma once
#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <type_traits>

#include "backends/cpu/special_functions.hpp"

namespace fluxion::cpu::unary_ops {
namespace ei = Eigen::internal;

template <class P> using ScalarOf = typename ei::unpacket_traits<P>::type;

/// f applied to each lane of x (functions without a vector form inside a packet function).
template <class P, class F> P per_lane(const P& x, F f) {
  constexpr int n = ei::unpacket_traits<P>::size;
  alignas(64) ScalarOf<P> v[n];
  ei::pstoreu(v, x);
  for (int i = 0; i < n; ++i) v[i] = f(v[i]);
  return ei::ploadu<P>(v);
}

/// -x by flipping the sign bit: -(+0) = -0, as the scalar negation.
template <class P> P neg_packet(const P& x) { return ei::pxor(x, ei::pset1<P>(ScalarOf<P>(-0.0))); }

/// The hardware's correctly rounded square root (Eigen's fast-math psqrt is not, see above).
template <class P> P sqrt_packet(const P& x) {
  using S = ScalarOf<P>;
  constexpr bool f32 = std::is_same_v<S, float>;
#if defined(EIGEN_VECTORIZE_AVX512)
  if constexpr (sizeof(P) == 64) {
    if constexpr (f32) return _mm512_sqrt_ps(x);
    else return _mm512_sqrt_pd(x);
  } else
#endif
#if defined(EIGEN_VECTORIZE_AVX)
      if constexpr (sizeof(P) == 32) {
    if constexpr (f32) return _mm256_sqrt_ps(x);
    else return _mm256_sqrt_pd(x);
  } else
#endif
#if defined(EIGEN_VECTORIZE_SSE2)
      if constexpr (sizeof(P) == 16) {
    if constexpr (f32) return _mm_sqrt_ps(x);
    else return _mm_sqrt_pd(x);
  } else
#endif
    return per_lane(x, [](S v) { return std::sqrt(v); });
}

/// log with subnormal arguments: Eigen's plog clamps them to the smallest normal, so they are
/// scaled by 2^k first (exact) and k ln 2 subtracted after (0.13 ulp more at most). Zeros and
/// negative arguments take the same path (±0 scaled is ±0: -inf; NaN stays NaN).
template <class P> P log_packet(const P& x) {
  using S = ScalarOf<P>;
  constexpr bool f32 = std::is_same_v<S, float>;
  const P tiny = ei::pcmp_lt(x, ei::pset1<P>(std::numeric_limits<S>::min()));
  const P scaled = ei::pselect(tiny, ei::pmul(x, ei::pset1<P>(f32 ? S(0x1p24) : S(0x1p54))), x);
  const S k_ln2 = f32 ? S(16.635532333438687) : S(37.429947750237047);  // 24 ln 2, 54 ln 2
  return ei::psub(ei::plog(scaled), ei::pand(tiny, ei::pset1<P>(k_ln2)));
}

/// Operations with a packet form for f32 and f64 (on every target Eigen vectorises).
struct Vector {
  template <class S> static constexpr bool kVector = true;
};

struct Neg : Vector {
  template <class P> static P packet(const P& x) { return neg_packet(x); }
};
struct Sqrt : Vector {
  template <class P> static P packet(const P& x) { return sqrt_packet(x); }
};
/// 1 / sqrt(x), both correctly rounded (Eigen's fast-math prsqrt is an estimate and a Newton step).
struct Rsqrt : Vector {
  template <class P> static P packet(const P& x) { return ei::pdiv(ei::pset1<P>(ScalarOf<P>(1)), sqrt_packet(x)); }
};
struct Exp : Vector {
  template <class P> static P packet(const P& x) { return exp_packet(x); }
};
struct Log : Vector {
  template <class P> static P packet(const P& x) { return log_packet(x); }
};
struct Tanh : Vector {
  template <class P> static P packet(const P& x) { return tanh_packet(x); }
};
/// 1 / (1 + exp(-x)): 0 at -inf (exp gives inf), 1 at +inf, NaN kept.
struct Logistic : Vector {
  template <class P> static P packet(const P& x) {
    const P one = ei::pset1<P>(ScalarOf<P>(1));
    return ei::pdiv(one, ei::padd(one, exp_packet(neg_packet(x))));
  }
};
/// x > 0: 1, x < 0: -1, else x itself (±0 keep their sign, NaN stays NaN), like XLA's sign.
struct Sign : Vector {
  template <class P> static P packet(const P& x) {
    using S = ScalarOf<P>;
    const P zero = ei::pzero(x);
    const P r = select_lt(zero, x, ei::pset1<P>(S(1)), x);
    return select_lt(x, zero, ei::pset1<P>(S(-1)), r);
  }
};

// Eigen's forms where it has them (it says so in packet_traits), else the C library per element.
struct Log1p {
  template <class S> static constexpr bool kVector = ei::packet_traits<S>::HasLog1p;
  template <class P> static P packet(const P& x) { return ei::plog1p(x); }
  template <class S> static S one(S x) { return std::log1p(x); }
};
struct Expm1 {
  template <class S> static constexpr bool kVector = ei::packet_traits<S>::HasExpm1;
  template <class P> static P packet(const P& x) { return ei::pexpm1(x); }
  template <class S> static S one(S x) { return std::expm1(x); }
};
struct Sin {
  template <class S> static constexpr bool kVector = ei::packet_traits<S>::HasSin;
  template <class P> static P packet(const P& x) { return ei::psin(x); }
  template <class S> static S one(S x) { return std::sin(x); }
};
struct Cos {
  template <class S> static constexpr bool kVector = ei::packet_traits<S>::HasCos;
  template <class P> static P packet(const P& x) { return ei::pcos(x); }
  template <class S> static S one(S x) { return std::cos(x); }
};
struct Floor {
  template <class S> static constexpr bool kVector = ei::packet_traits<S>::HasFloor;
  template <class P> static P packet(const P& x) { return ei::pfloor(x); }
  template <class S> static S one(S x) { return std::floor(x); }
};
struct Ceil {
  template <class S> static constexpr bool kVector = ei::packet_traits<S>::HasCeil;
  template <class P> static P packet(const P& x) { return ei::pceil(x); }
  template <class S> static S one(S x) { return std::ceil(x); }
};
/// Halfway cases away from zero (std::round).
struct Round {
  template <class S> static constexpr bool kVector = ei::packet_traits<S>::HasRound;
  template <class P> static P packet(const P& x) { return ei::pround(x); }
  template <class S> static S one(S x) { return std::round(x); }
};
/// Halfway cases to even (std::nearbyint in the default rounding mode, numpy's round).
struct RoundEven {
  template <class S> static constexpr bool kVector = ei::packet_traits<S>::HasRint;
  template <class P> static P packet(const P& x) { return ei::print(x); }
  template <class S> static S one(S x) { return std::nearbyint(x); }
};

/// F of one value: lane 0 of F's packet form on a broadcast packet, or F::one without one.
template <class F, class S> S apply_one(S x) {
  if constexpr (F::template kVector<S>) {
    return ei::pfirst(F::packet(ei::pset1<typename ei::packet_traits<S>::type>(x)));
  } else {
    return F::template one<S>(x);
  }
}

/// F as an Eigen functor: packets take F::packet, single elements apply_one.
template <class F, class S> struct UnaryFunctor {
  S operator()(S x) const { return apply_one<F>(x); }
  template <class P> P packetOp(const P& x) const { return F::packet(x); }
};

/// F applied to the Eigen array expression `a`.
template <class F, class A> auto apply_array(const A& a) { return a.unaryExpr(UnaryFunctor<F, typename A::Scalar>()); }

}  // namespace fluxion::cpu::unary_ops

namespace Eigen::internal {
template <class F, class S> struct functor_traits<fluxion::cpu::unary_ops::UnaryFunctor<F, S>> {
  enum { Cost = 20 * NumTraits<S>::MulCost, PacketAccess = F::template kVector<S> };
};
}  // namespace Eigen::internal
