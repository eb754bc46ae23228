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

// fused_multiply_add, XLA's log1p and erf_inv live in the shared scalar source
// (primitives/scalar_functions.hpp, with the ErfInv functor), so jit's generated kernels use them too.
using scalar_functions::erf_inv_scalar;
using scalar_functions::fused_multiply_add;

}  // namespace fluxion::primitives::random_detail
