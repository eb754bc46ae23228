/// Vectorised special functions shared by the unary primitives' block kernels and the fused
/// tile programs (backends/cpu/tile_program.hpp), so both paths compute the same values.
#pragma once
#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace fluxion::cpu {

/// a < b ? if_true : if_false, lane by lane (false where either is NaN). Eigen's AVX-512 pselect
/// takes its mask as a vector (compare, mask to vector, vector to mask, blend: 4 instructions);
/// here the compare writes a mask register that the blend reads (2).
template <class Packet>
inline Packet select_lt(const Packet& a, const Packet& b, const Packet& if_true, const Packet& if_false) {
  namespace ei = Eigen::internal;
#if defined(EIGEN_VECTORIZE_AVX512)
  // (Compared by size and scalar: the vector types' attributes are dropped in is_same.)
  using Scalar = typename ei::unpacket_traits<Packet>::type;
  if constexpr (sizeof(Packet) == 64 && std::is_same_v<Scalar, float>)
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), if_false, if_true);
  else if constexpr (sizeof(Packet) == 64 && std::is_same_v<Scalar, double>)
    return _mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, b, _CMP_LT_OQ), if_false, if_true);
  else
#endif
    return ei::pselect(ei::pcmp_lt(a, b), if_true, if_false);
}

/// f32 exp of a packet, branch-free, at most 1.06 ulp from the exact value over [-87, 88.72]
/// with FMA (1.32 without, SSE2)
/// (every float there, against double exp; Eigen 3.4's pexp: see bench/RESULTS.md). exp(x) =
/// 2^m e^r with m = round(x log2 e) (the 1.5 * 2^23 shift leaves m in the low bits of t), r =
/// x - m ln 2 in two parts (|r| <= ln2 / 2) and e^r a degree-6 polynomial (fitted here for
/// relative error, Lawson's iteration on Chebyshev nodes; 2e-9 before f32 rounding). 2^m is
/// applied by adding m to the exponent field, exact wherever the result is a normal float:
/// m = 128 with r < 0 (x in [88.376, 88.723)) stays finite, as Eigen's clamped version did not.
/// Lanes below -87 are 0 (the functor's scalar contract), above 88.72283 inf (their exponent
/// sums would be garbage, as are those of huge |x| where the shift trick fails; both are
/// selected away), and the last max passes NaN through (e^x > x for every other x).
/// About 17 vector instructions against about 30 for Eigen's pexp (its general ldexp).
template <class Packet> Packet exp_f32(const Packet& x) {
  namespace ei = Eigen::internal;
  using PacketI = typename ei::unpacket_traits<Packet>::integer_packet;
  const Packet shift = ei::pset1<Packet>(12582912.0f);  // 1.5 * 2^23
  const Packet t = ei::pmadd(x, ei::pset1<Packet>(1.44269504088896341f), shift);
  const Packet m = ei::psub(t, shift);
  // ln 2 in two parts: 0.693359375 has 9 significant bits, so m times it is exact (|m| <= 2^8)
  // even where pmadd is a rounded multiply and add (SSE2 and AVX without FMA).
  Packet r = ei::pmadd(m, ei::pset1<Packet>(-0.693359375f), x);
  r = ei::pmadd(m, ei::pset1<Packet>(2.12194440054690583e-04f), r);  // 0.693359375 - ln 2
  Packet p = ei::pset1<Packet>(1.384361880e-03f);
  p = ei::pmadd(p, r, ei::pset1<Packet>(8.374184370e-03f));
  p = ei::pmadd(p, r, ei::pset1<Packet>(4.166800529e-02f));
  p = ei::pmadd(p, r, ei::pset1<Packet>(1.666643023e-01f));
  p = ei::pmadd(p, r, ei::pset1<Packet>(4.999999404e-01f));
  p = ei::pmadd(p, r, ei::pset1<Packet>(1.0f));
  p = ei::pmadd(p, r, ei::pset1<Packet>(1.0f));
  const PacketI scale = ei::plogical_shift_left<23>(ei::preinterpret<PacketI>(t));  // m << 23
  Packet out = ei::preinterpret<Packet>(ei::padd(ei::preinterpret<PacketI>(p), scale));
  out = select_lt(x, ei::pset1<Packet>(-87.0f), ei::pzero(x), out);
  out = select_lt(ei::pset1<Packet>(88.72283f), x, ei::pset1<Packet>(INFINITY), out);
  // pmax(a, b) gives a where a is NaN on every Eigen target (x86 follows std::max's order, NEON
  // propagates NaN); the checked pmax<PropagateNaN> would cost two compares and selects more.
  return ei::pmax(x, out);
}

/// f64 exp of a packet, branch-free, for x in [-708, 709.78] (the callers' range): exp(x) =
/// 2^m e^r with m = round(x log2 e) (the 1.5 * 2^52 shift leaves m in the low bits of t), r = x -
/// m ln 2 in two parts (fdlibm's: the first has 32 significant bits, so m times it is exact and
/// the subtraction too, FMA or not) and e^r its Taylor polynomial of degree 13 (truncation below
/// 4e-18 relative for |r| <= ln2 / 2). 2^m is added to the exponent field: exact where the result
/// is a normal double, which it is over that range. Lanes below -708 are 0 (ExpFlushToZero's
/// contract), above 709.782712893384 inf (both selected away from garbage), NaN passes through the
/// last max as in exp_f32. About 22 vector instructions without a division: Eigen 3.4's pexp
/// (a rational approximation) cost 1.8 ns per element here, most of it its divide.
template <class Packet> Packet exp_f64(const Packet& x) {
  namespace ei = Eigen::internal;
  typedef uint64_t Bits __attribute__((vector_size(sizeof(Packet))));  // unsigned: wrapping adds
  const Packet shift = ei::pset1<Packet>(6755399441055744.0);          // 1.5 * 2^52
  const Packet t = ei::pmadd(x, ei::pset1<Packet>(1.4426950408889634074), shift);
  const Packet m = ei::psub(t, shift);
  Packet r = ei::pmadd(m, ei::pset1<Packet>(-6.93147180369123816490e-01), x);
  r = ei::pmadd(m, ei::pset1<Packet>(-1.90821492927058770002e-10), r);
  // 1/k! for k = 13 down to 2, then 1 + r p.
  static constexpr double kInverseFactorials[] = {
      1.6059043836821613e-10, 2.0876756987868100e-09, 2.5052108385441720e-08, 2.7557319223985888e-07,
      2.7557319223985893e-06, 2.4801587301587302e-05, 1.9841269841269841e-04, 1.3888888888888889e-03,
      8.3333333333333332e-03, 4.1666666666666664e-02, 1.6666666666666666e-01, 0.5};
  Packet p = ei::pset1<Packet>(kInverseFactorials[0]);
  for (int k = 1; k < 12; ++k) p = ei::pmadd(p, r, ei::pset1<Packet>(kInverseFactorials[k]));
  p = ei::pmadd(p, r, ei::pset1<Packet>(1.0));
  p = ei::pmadd(p, r, ei::pset1<Packet>(1.0));
  Bits pb, tb;
  std::memcpy(&pb, &p, sizeof p);
  std::memcpy(&tb, &t, sizeof t);
  pb += tb << 52;  // + m in the exponent field (modulo 2^64: m < 0 works too)
  Packet out;
  std::memcpy(&out, &pb, sizeof out);
  out = select_lt(x, ei::pset1<Packet>(-708.0), ei::pzero(x), out);
  out = select_lt(ei::pset1<Packet>(709.782712893384), x, ei::pset1<Packet>(INFINITY), out);
  return ei::pmax(x, out);
}

/// n / q for f32 packets with q normal and positive. On AVX-512 a 14-bit reciprocal estimate and
/// one residual correction (y = n r, then y - (q y - n) r, Markstein's order) round within a hair
/// of the division (tanh_f32's worst case over every float in [0, 9] stays 5.03 ulp) in four
/// pipelined instructions; vdivps's divider takes one 16-lane division per 10 cycles (a third of
/// the profile of a fused f32 gradient with tanh; 2.23 -> 2.12 us at 4096 elements, measured:
/// bench/RESULTS.md). The correction's order keeps
/// -0 (y - (+0) r = -0) and subnormal quotients exact. Elsewhere a plain division.
template <class Packet> Packet divide_f32(const Packet& n, const Packet& q) {
#if defined(EIGEN_VECTORIZE_AVX512)
  if constexpr (sizeof(Packet) == 64) {
    const __m512 r = _mm512_rcp14_ps(q);
    const __m512 y = _mm512_mul_ps(n, r);
    return _mm512_fnmadd_ps(_mm512_fmsub_ps(q, y, n), r, y);
  } else
#endif
    return Eigen::internal::pdiv(n, q);
}

/// f32 tanh of a packet: x P(x²) / Q(x²) on x clamped to [-8.6, 8.6] (beyond, tanh rounds to
/// ±1), P of degree 6 and Q of degree 3 with Q(0) = 1, fitted here (near-minimax in relative
/// error, linearised with Lawson weights: 6e-9 before f32 rounding). Measured against double tanh
/// over every float: at most 5.03 ulp with FMA (Eigen 3.4's ptanh: 4.90), 5.87 with SSE2 (Eigen:
/// 6.40) on every 7th. 14 vector instructions (17 on AVX-512: divide_f32), no select: tiny x
/// gives x P(0) / 1 = x (P(0) rounds to 1), -0 stays -0, and the clamps keep NaN (pmax and pmin
/// return their first operand when it is NaN). Eigen's needs 18 on AVX-512, its tiny-x select
/// going through a vector mask.
template <class Packet> Packet tanh_f32(const Packet& x0) {
  namespace ei = Eigen::internal;
  const Packet x = ei::pmin(ei::pmax(x0, ei::pset1<Packet>(-8.6f)), ei::pset1<Packet>(8.6f));
  const Packet z = ei::pmul(x, x);
  Packet p = ei::pset1<Packet>(-9.6115623812e-14f);
  p = ei::pmadd(p, z, ei::pset1<Packet>(5.6945522645e-11f));
  p = ei::pmadd(p, z, ei::pset1<Packet>(-2.1056000407e-08f));
  p = ei::pmadd(p, z, ei::pset1<Packet>(1.1353230434e-05f));
  p = ei::pmadd(p, z, ei::pset1<Packet>(3.1226856791e-03f));
  p = ei::pmadd(p, z, ei::pset1<Packet>(1.3100704118e-01f));
  p = ei::pmadd(p, z, ei::pset1<Packet>(9.9999999597e-01f));
  Packet q = ei::pset1<Packet>(2.5735826935e-04f);
  q = ei::pmadd(q, z, ei::pset1<Packet>(2.4569527962e-02f));
  q = ei::pmadd(q, z, ei::pset1<Packet>(4.6434033526e-01f));
  q = ei::pmadd(q, z, ei::pset1<Packet>(1.0f));
  return divide_f32(ei::pmul(x, p), q);
}

/// f64 tanh of a packet (Eigen 3.4 vectorises tanh for f32 only; glibc's scalar tanh, through
/// expm1, cost ~30 ns per element here and dominated small-state integrators; measured: bench/RESULTS.md).
/// |x| < 0.625: Lambert's continued fraction x / (1 + z / (3 + z / (5 + ...))), z = x², to 8
/// levels by the forward recurrence of its convergents A_j (denominator) and D_j = A_j - B_j, so
/// tanh x = x (1 - D/A) with D/A <= 0.13 (no division chain, no cancellation). Otherwise
/// sign(x) (1 - 2 / (exp(2|x|) + 1)). Measured at most 1.83 ulp from a long-double tanh over
/// 2M arguments (glibc: 2.16); NaN stays NaN, -0 stays -0, ±inf gives ±1.
template <class Packet> Packet tanh_f64(const Packet& x) {
  namespace ei = Eigen::internal;
  constexpr double kSmall = 0.625;
  constexpr int kLevels = 8;
  const Packet one = ei::pset1<Packet>(1.0), z = ei::pmul(x, x);
  Packet a1 = one, a0 = one, d1 = one, d0 = ei::pzero(x);  // A_{j-1}, A_j, D_{j-1}, D_j
  for (int j = 1; j <= kLevels; ++j) {
    const Packet b = ei::pset1<Packet>(double(2 * j + 1));
    const Packet a2 = ei::pmadd(b, a0, ei::pmul(z, a1)), d2 = ei::pmadd(b, d0, ei::pmul(z, d1));
    a1 = a0, a0 = a2, d1 = d0, d0 = d2;
  }
  const Packet small = ei::pmul(x, ei::psub(one, ei::pdiv(d0, a0)));
  const Packet a = ei::pabs(x);
  const Packet e = ei::pexp(ei::padd(a, a));
  Packet big = ei::psub(one, ei::pdiv(ei::pset1<Packet>(2.0), ei::padd(e, one)));
  big = select_lt(x, ei::pzero(x), ei::pnegate(big), big);  // big >= 0.46: no zero to sign
  const Packet r = select_lt(a, ei::pset1<Packet>(kSmall), small, big);
  return ei::pselect(ei::pcmp_eq(x, x), r, x);  // NaN: x itself
}

/// exp of a packet: exp_f32 or exp_f64. Results are an exact 0 for x < -87 (f32) and x < -708
/// (f64), a little above where they leave the normal range (-87.34, -708.40): the flush to zero
/// XLA's CPU backend makes too, while Eigen's pexp scales through subnormal results, each a
/// microcode assist (bench exp_f64_underflow). NaN stays NaN; ±inf give inf and 0.
template <class Packet> Packet exp_packet(const Packet& x) {
  if constexpr (std::is_same_v<typename Eigen::internal::unpacket_traits<Packet>::type, float>) return exp_f32(x);
  else return exp_f64(x);
}

/// tanh of a packet: tanh_f32 or tanh_f64.
template <class Packet> Packet tanh_packet(const Packet& x) {
  if constexpr (std::is_same_v<typename Eigen::internal::unpacket_traits<Packet>::type, float>) return tanh_f32(x);
  else return tanh_f64(x);
}
}  // namespace fluxion::cpu
