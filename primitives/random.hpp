/// The random family's primitive handles (defined in random.cpp) and the scalar code their CPU and
/// CUDA kernels share: the threefry2x32 block cipher, fused multiply-add, and XLA's log1p and
/// erf_inv. One text for g++ and nvcc, so the host and device streams cannot drift apart.
///
/// A 32-bit word of the counter-based generator lives in an i64 holding its unsigned value in
/// [0, 2^32) (Fluxion has no unsigned dtype); kernels read the low 32 bits of every operand.
#pragma once
#include "backends/cuda/device_code.hpp"
#include "fluxion/primitive.hpp"
#include "primitives/scalar_functions.hpp"

#include <math.h>  // HUGE_VALF, HUGE_VAL

namespace fluxion::primitives::random_detail {

/// threefry2x32: (k0, k1, x0, x1) -> (y0, y1), i64 words; operands of one shape or rank 0. NoParams.
const Primitive& threefry2x32_p();
/// erf_inv: the inverse error function, elementwise on f32/f64, XLA's approximation. NoParams.
const Primitive& erf_inv_p();
/// fma: (a, b, c) -> a·b + c with one rounding (f32, f64; one shape or rank 0). NoParams.
const Primitive& fma_p();
/// permute_by_keys: (keys i64[..., n], values T[..., n]) -> values reordered along the last axis
/// so that their keys ascend, stably (equal keys keep their order). NoParams.
const Primitive& permute_by_keys_p();

/// The Threefry-2x32 block (Salmon et al., 20 rounds, JAX's key schedule and rotations) applied to
/// the counter pair (x0, x1) under key (k0, k1); the pair returned in y0, y1.
FLUXION_HD inline void threefry2x32_block(unsigned k0, unsigned k1, unsigned x0, unsigned x1, unsigned& y0,
                                          unsigned& y1) {
  const unsigned ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  const int rotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  x0 += ks[0];
  x1 += ks[1];
  for (int group = 0; group < 5; ++group) {  // 5 groups of 4 rounds, a key injection after each
    for (int r = 0; r < 4; ++r) {
      const int d = rotations[group % 2][r];
      x0 += x1;
      x1 = (x1 << d) | (x1 >> (32 - d));
      x1 ^= x0;
    }
    x0 += ks[(group + 1) % 3];
    x1 += ks[(group + 2) % 3] + static_cast<unsigned>(group + 1);
  }
  y0 = x0;
  y1 = x1;
}

/// a·b + c rounded once (the hardware's fused multiply-add on both sides).
FLUXION_HD inline float fused_multiply_add(float a, float b, float c) { return ::fmaf(a, b, c); }
FLUXION_HD inline double fused_multiply_add(double a, double b, double c) { return ::fma(a, b, c); }

/// Horner's rule p = c[0] w^(n-1) + ... + c[n-1] with fused multiply-adds, as XLA's CPU code runs it.
template <class T, int N> FLUXION_HD T erf_inv_horner(const T (&c)[N], T w) {
  T p = c[0];
  for (int i = 1; i < N; ++i) p = fused_multiply_add(p, w, c[i]);
  return p;
}

/// XLA's log1p (its CPU intrinsic): for |x| < √2 - 1, Cephes' rational approximation x - x²/2 +
/// x³ P(x)/Q(x) evaluated with fused multiply-adds; elsewhere log(1 + x).
template <class T> FLUXION_HD T xla_log1p(T x) {
  const T num[7] = {T(4.5270000862445199635215E-5), T(4.9854102823193375972212E-1), T(6.5787325942061044846969E0),
                    T(2.9911919328553073277375E1),  T(6.0949667980987787057556E1),  T(5.7112963590585538103336E1),
                    T(2.0039553499201281259648E1)};
  const T den[7] = {T(1.0),
                    T(1.5062909083469192043167E1),
                    T(8.3047565967967209469434E1),
                    T(2.2176239823732856465394E2),
                    T(3.0909872225312059774938E2),
                    T(2.1642788614495947685003E2),
                    T(6.0118660497603843919306E1)};
  if (!(scalar_functions::fx_fabs(x) < T(0.41421356237309504880))) return scalar_functions::fx_log(x + T(1));
  T p = T(0), q = T(0);
  for (int i = 0; i < 7; ++i) {
    p = fused_multiply_add(p, x, num[i]);
    q = fused_multiply_add(q, x, den[i]);
  }
  const T x2 = x * x;
  return x + fused_multiply_add(T(-0.5), x2, (x * x2) * (p / q));
}

/// XLA's erf_inv (the decomposition jax.lax.erf_inv lowers to): Giles' single-precision polynomials
/// in w = -log1p(-x²) for f32, his three double-precision ones for f64; ±1 gives ±inf and |x| > 1
/// NaN. Bit for bit XLA's except where XLA's log and the C library's differ (tests/test_random.cpp
/// counts the samples of normal that match jax.random.normal's).
FLUXION_HD inline float erf_inv_scalar(float x) {
  const float w = -xla_log1p(-x * x);
  float p;
  if (w < 5.0f) {
    const float c[9] = {2.81022636e-08f, 3.43273939e-07f, -3.5233877e-06f, -4.39150654e-06f, 0.00021858087f,
                        -0.00125372503f, -0.00417768164f, 0.246640727f,    1.50140941f};
    p = erf_inv_horner(c, w - 2.5f);
  } else {
    const float c[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f, -0.00367342844f, 0.00573950773f,
                        -0.0076224613f,   0.00943887047f,  1.00167406f,    2.83297682f};
    p = erf_inv_horner(c, scalar_functions::fx_sqrt(w) - 3.0f);
  }
  return scalar_functions::fx_fabs(x) == 1.0f ? x * HUGE_VALF : p * x;
}
FLUXION_HD inline double erf_inv_scalar(double x) {
  const double w = -xla_log1p(-x * x);
  double p;
  if (w < 6.25) {
    const double c[23] = {
        -3.6444120640178196996e-21, -1.685059138182016589e-19,  1.2858480715256400167e-18,  1.115787767802518096e-17,
        -1.333171662854620906e-16,  2.0972767875968561637e-17,  6.6376381343583238325e-15,  -4.0545662729752068639e-14,
        -8.1519341976054721522e-14, 2.6335093153082322977e-12,  -1.2975133253453532498e-11, -5.4154120542946279317e-11,
        1.051212273321532285e-09,   -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
        -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352,   -0.00074070253416626697512,
        -0.0060336708714301490533,  0.24015818242558961693,     1.6536545626831027356};
    p = erf_inv_horner(c, w - 3.125);
  } else if (w < 16.0) {
    const double c[19] = {
        2.2137376921775787049e-09,  9.0756561938885390979e-08, -2.7517406297064545428e-07, 1.8239629214389227755e-08,
        1.5027403968909827627e-06,  -4.013867526981545969e-06, 2.9234449089955446044e-06,  1.2475304481671778723e-05,
        -4.7318229009055733981e-05, 6.8284851459573175448e-05, 2.4031110387097893999e-05,  -0.0003550375203628474796,
        0.00095328937973738049703,  -0.0016882755560235047313, 0.0024914420961078508066,   -0.0037512085075692412107,
        0.005370914553590063617,    1.0052589676941592334,     3.0838856104922207635};
    p = erf_inv_horner(c, scalar_functions::fx_sqrt(w) - 3.25);
  } else {
    const double c[17] = {-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
                          -3.7894654401267369937e-09, 7.6157012080783393804e-09,  -1.4960026627149240478e-08,
                          2.9147953450901080826e-08,  -6.7711997758452339498e-08, 2.2900482228026654717e-07,
                          -9.9298272942317002539e-07, 4.5260625972231537039e-06,  -1.9681778105531670567e-05,
                          7.5995277030017761139e-05,  -0.00021503011930044477347, -0.00013871931833623122026,
                          1.0103004648645343977,      4.8499064014085844221};
    p = erf_inv_horner(c, scalar_functions::fx_sqrt(w) - 5.0);
  }
  return scalar_functions::fx_fabs(x) == 1.0 ? x * HUGE_VAL : p * x;
}

}  // namespace fluxion::primitives::random_detail
