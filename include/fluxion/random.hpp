/// Counter-based random numbers (fx::random::): threefry2x32 keys and distributions that give
/// bit for bit the streams of jax.random (JAX's default jax_threefry_partitionable mode) for the
/// same seed, shape and dtype. Every function is pure in its key, so vmap, jit, scan and grad
/// apply: vmap over a batch of keys equals a loop, jit gives the same bits, and the derivatives
/// with respect to distribution parameters (minval/maxval, p's uses, logits...) are those of the
/// composition (reparameterized samples).
///
/// Fluxion has no unsigned dtype, so a 32-bit word is an i64 holding its unsigned value in
/// [0, 2^32): key_data(key(42)) is the i64[2] tensor [0, 42], numerically jax.random.key_data's
/// u32[2]. Integer seeds and fold_in data are taken modulo 2^64 and 2^32 (two's complement), like
/// JAX with jax_enable_x64; without x64 JAX keeps only the low 32 bits of a seed (equal for seeds
/// in [0, 2^31)).
#pragma once
#include <cstdint>
#include <vector>

#include "fluxion/pytree.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion::random {

/// A PRNG key: the two threefry2x32 words in an i64[2] tensor (i64[..., 2] for a batch of keys
/// made by wrap_key_data). A pytree with one leaf: transforms see its tensor.
struct Key {
  Tensor data;
};

/// The key of an integer seed: words [seed >> 32, seed & 0xFFFFFFFF] (jax.random.key / PRNGKey).
Key key(int64_t seed);
/// A key (or a batch of keys, shape [..., 2]) from i64 words, e.g. those key_data returned.
Key wrap_key_data(const Tensor& words);
/// The key's words: i64[2] holding unsigned 32-bit values (JAX's u32[2]).
Tensor key_data(const Key& k);

/// n new keys (jax.random.split): threefry2x32 of the counters 0..n-1 under k.
std::vector<Key> split(const Key& k, int64_t n = 2);
/// A key derived from k and 32-bit data (jax.random.fold_in); data is taken modulo 2^32.
Key fold_in(const Key& k, int64_t data);
/// fold_in with data an integer scalar tensor (traced data allowed).
Key fold_in(const Key& k, const Tensor& data);

/// Uniform 32-bit words (jax.random.bits with uint32): i64 values in [0, 2^32).
Tensor bits(const Key& k, const Shape& shape = {});

/// Uniform floats in [minval, maxval) (jax.random.uniform): the mantissa of random bits (32 for
/// f32; 64 for f64, like JAX with x64) scaled into the range, then at least minval.
Tensor uniform(const Key& k, const Shape& shape = {}, DType dtype = f32, double minval = 0.0, double maxval = 1.0);
/// uniform with tensor bounds (broadcast to `shape`, converted to dtype): differentiable in them.
Tensor uniform(const Key& k, const Shape& shape, DType dtype, const Tensor& minval, const Tensor& maxval);

/// Standard normal samples (jax.random.normal): sqrt(2) erf_inv(u), u uniform in (-1, 1).
Tensor normal(const Key& k, const Shape& shape = {}, DType dtype = f32);

/// Booleans true with probability p (jax.random.bernoulli, mode "low"): uniform(k, shape) < p,
/// in f32 for a double p.
Tensor bernoulli(const Key& k, double p = 0.5, const Shape& shape = {});
/// bernoulli with floating p; the samples have p's shape.
Tensor bernoulli(const Key& k, const Tensor& p);
/// bernoulli with floating p broadcast to `shape`.
Tensor bernoulli(const Key& k, const Tensor& p, const Shape& shape);

/// Indices (i32) drawn from the categorical distribution with unnormalized log-probabilities
/// `logits` along `axis` (jax.random.categorical): argmax of logits plus Gumbel noise.
Tensor categorical(const Key& k, const Tensor& logits, int64_t axis = -1);

/// Integers uniform in [minval, maxval) (jax.random.randint), i32 (JAX's dtype without x64):
/// JAX's two-word modulus algorithm; bounds clip to the i32 range and maxval <= minval gives
/// minval. Other dtypes are a DTypeError.
Tensor randint(const Key& k, const Shape& shape, int64_t minval, int64_t maxval, DType dtype = i32);
/// randint with integer tensor bounds broadcast to `shape`.
Tensor randint(const Key& k, const Shape& shape, const Tensor& minval, const Tensor& maxval, DType dtype = i32);

/// A random permutation of 0..n-1 (i32; jax.random.permutation(key, n)): rounds of sorting by
/// fresh random words. Negative n is a ShapeError (JAX returns an empty array).
Tensor permutation(const Key& k, int64_t n);
/// x with its leading axis permuted (the same permutation for every trailing index).
Tensor permutation(const Key& k, const Tensor& x);

/// Normal samples truncated to (lower, upper) (jax.random.truncated_normal): erf_inv of a uniform
/// between erf(lower/√2) and erf(upper/√2), clipped strictly inside the bounds.
Tensor truncated_normal(const Key& k, double lower, double upper, const Shape& shape = {}, DType dtype = f32);

}  // namespace fluxion::random

/// Keys are pytrees of one leaf (a Boost.Hana struct with the one member `data`), so they pass
/// through vmap, jit, scan and grad like a tensor; fx::in_axes(0) maps a batch of keys.
BOOST_HANA_ADAPT_STRUCT(fluxion::random::Key, data);

namespace fluxion {

namespace lax {
/// The erf_inv primitive (f32, f64): XLA's approximation of the inverse error function.
Tensor erf_inv(const Tensor& x);
}  // namespace lax

}  // namespace fluxion
