// fx::random:: — keys and distributions composed from the random family's primitives
// (primitives/random.cpp) and lax ops, step for step JAX's algorithms (jax/_src/random/core.py and
// threefry2x32.py, JAX 0.10 with jax_threefry_partitionable, the default), so the bits agree.
// Words are i64 values in [0, 2^32); every bit operation below stays exact in i64: xor is
// a + b - 2 (a & b), shifts are divisions and multiplications by powers of two.
#include <cmath>
#include <limits>

#include "fluxion/lax.hpp"
#include "fluxion/ops.hpp"
#include "fluxion/random.hpp"
#include "primitives/random.hpp"

namespace fluxion::random {
namespace random_ops_detail {

namespace prims = primitives::random_detail;
constexpr int64_t kWordMask = 0xFFFFFFFFll;
constexpr int64_t kTwo32 = int64_t(1) << 32;

Tensor i64_scalar(int64_t v) { return full(Shape{}, v, i64); }
Tensor float_scalar(double v, DType dtype) { return full(Shape{}, v, dtype); }

/// Checks that `k` is one key (i64[2]); ShapeError/DTypeError naming `op` otherwise.
void check_key(const char* op, const Key& k) {
  if (!k.data.defined())
    detail::fail<ShapeError>(op, "got an empty Key. Make keys with fx::random::key(seed), split or fold_in.");
  if (k.data.dtype() != i64)
    detail::fail<DTypeError>(op, "a key holds i64 words, got ", k.data.aval(),
                             ". Make keys with fx::random::key or wrap_key_data.");
  if (!(k.data.shape() == Shape{2}))
    detail::fail<ShapeError>(op, "expects a single key (i64[2] words), got ", k.data.aval(),
                             ". For a batch of keys, map over them with fx::vmap.");
}

/// Word i (0 or 1) of a key as an i64 scalar.
Tensor key_word(const Key& k, int64_t i) { return lax::reshape(lax::slice(k.data, {i}, {i + 1}), Shape{}); }

Key key_of_words(const Tensor& w0, const Tensor& w1) {
  return Key{lax::concatenate({lax::reshape(w0, Shape{1}), lax::reshape(w1, Shape{1})}, 0)};
}

std::pair<Tensor, Tensor> threefry(const Tensor& k0, const Tensor& k1, const Tensor& x0, const Tensor& x1) {
  std::vector<Tensor> y = bind(prims::threefry2x32_p(), {k0, k1, x0, x1});
  return {y[0], y[1]};
}

/// The threefry outputs for the row-major counters of `shape` (JAX's iota_2x32_shape: counter i
/// split into its high and low 32-bit words).
std::pair<Tensor, Tensor> counter_bits(const Key& k, const Shape& shape) {
  const int64_t n = shape.num_elements();
  Tensor hi = i64_scalar(0), lo = i64_scalar(0);
  if (shape.size() > 0) {
    lo = lax::reshape(lax::iota(i64, Shape{n}, 0), shape);
    if (n > kTwo32) {  // only arrays beyond 2^32 elements have a nonzero high word
      hi = lax::div(lo, i64_scalar(kTwo32));
      lo = lax::rem(lo, i64_scalar(kTwo32));
    }
  }
  return threefry(key_word(k, 0), key_word(k, 1), hi, lo);
}

/// a ^ b for words in [0, 2^32).
Tensor word_xor(const Tensor& a, const Tensor& b) {
  Tensor both = lax::logical_and(a, b);
  return lax::sub(lax::add(a, b), lax::mul(both, i64_scalar(2)));
}

Tensor bits32(const Key& k, const Shape& shape) {
  auto [b1, b2] = counter_bits(k, shape);
  return word_xor(b1, b2);
}

/// Floats in [0, 1): the top mantissa bits of the random bits, i.e. JAX's bitcast of
/// (bits >> (width - mantissa)) | bits(1.0) minus 1.0, computed as m · 2^-mantissa (exact).
Tensor unit_floats(const Key& k, const Shape& shape, DType dtype) {
  if (dtype == f32) {
    Tensor m = lax::div(bits32(k, shape), i64_scalar(int64_t(1) << 9));
    return lax::mul(lax::convert_element_type(m, f32), float_scalar(std::ldexp(1.0, -23), f32));
  }
  auto [hi, lo] = counter_bits(k, shape);  // 64-bit draws: hi << 32 | lo, of which the top 52 bits
  Tensor m = lax::add(lax::mul(hi, i64_scalar(int64_t(1) << 20)), lax::div(lo, i64_scalar(int64_t(1) << 12)));
  return lax::mul(lax::convert_element_type(m, f64), float_scalar(std::ldexp(1.0, -52), f64));
}

void check_float_dtype(const char* op, DType dtype) {
  if (!is_floating(dtype))
    detail::fail<DTypeError>(op, "samples floating dtypes (f32, f64, f16, bf16), got ", dtype,
                             ". Convert the result instead.");
}

/// `t` (any shape broadcasting to `shape`) broadcast to `shape`; ShapeError naming `what` otherwise.
Tensor broadcast_param(const char* op, const char* what, const Tensor& t, const Shape& shape) {
  const Shape b = broadcast_shapes(op, t.shape(), shape);
  if (!(b == shape))
    detail::fail<ShapeError>(op, what, " ", t.aval(), " does not broadcast to the sample shape ",
                             AbstractValue{shape, t.dtype()}, ". Give it a shape that broadcasts to the samples'.");
  return t.shape() == shape ? t : broadcast_to(t, shape);
}

/// a % span for words in [0, 2^32); span 0 leaves a unchanged, like XLA's unsigned x % 0 = x.
Tensor word_rem(const Tensor& a, const Tensor& span) { return lax::rem(a, span); }

Tensor mask_word(const Tensor& a) { return lax::logical_and(a, i64_scalar(kWordMask)); }

/// jax.random._shuffle of the vector `x` with `k`: rounds of permute_by_keys on fresh words.
Tensor shuffle(Key k, Tensor x) {
  const int64_t n = x.shape()[0];
  const double rounds = std::ceil(3.0 * std::log(static_cast<double>(std::max<int64_t>(1, n))) /
                                  std::log(static_cast<double>(kWordMask)));
  for (int r = 0; r < static_cast<int>(rounds); ++r) {
    std::vector<Key> ks = split(k, 2);
    k = ks[0];
    x = bind1(prims::permute_by_keys_p(), {bits32(ks[1], x.shape()), x});
  }
  return x;
}

}  // namespace random_ops_detail

using namespace random_ops_detail;

Key key(int64_t seed) {
  const uint64_t s = static_cast<uint64_t>(seed);
  return Key{from_vector(std::vector<int64_t>{static_cast<int64_t>(s >> 32), static_cast<int64_t>(s & 0xFFFFFFFFu)},
                         Shape{2})};
}

Key wrap_key_data(const Tensor& words) {
  if (words.dtype() != i64)
    detail::fail<DTypeError>("random.wrap_key_data", "key words are i64 values in [0, 2^32), got ", words.aval(),
                             ". Convert them with fx::astype(words, fx::i64).");
  if (words.ndim() == 0 || words.shape()[words.ndim() - 1] != 2)
    detail::fail<ShapeError>("random.wrap_key_data", "key words need a last axis of size 2, got ", words.aval(),
                             ". A threefry2x32 key is two 32-bit words.");
  return Key{words};
}

Tensor key_data(const Key& k) {
  if (!k.data.defined()) detail::fail<ShapeError>("random.key_data", "got an empty Key.");
  return k.data;
}

std::vector<Key> split(const Key& k, int64_t n) {
  check_key("random.split", k);
  if (n < 0) detail::fail<ShapeError>("random.split", "the number of keys must be non-negative, got ", n, ".");
  auto [b1, b2] = counter_bits(k, Shape{n});
  Tensor words = lax::concatenate({lax::reshape(b1, Shape{n, 1}), lax::reshape(b2, Shape{n, 1})}, 1);
  std::vector<Key> keys;
  keys.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) keys.push_back(Key{lax::reshape(lax::slice(words, {i, 0}, {i + 1, 2}), Shape{2})});
  return keys;
}

Key fold_in(const Key& k, int64_t data) {
  return fold_in(k, i64_scalar(static_cast<int64_t>(static_cast<uint64_t>(data) & 0xFFFFFFFFu)));
}

Key fold_in(const Key& k, const Tensor& data) {
  check_key("random.fold_in", k);
  if (!is_integer(data.dtype()) || data.ndim() != 0)
    detail::fail<ShapeError>("random.fold_in", "data must be an integer scalar, got ", data.aval(),
                             ". Fold in one number at a time (map over several with fx::vmap).");
  // JAX hashes the counter pair (seed(data) = [0, data]) under the key.
  Tensor word = mask_word(lax::convert_element_type(data, i64));
  auto [y0, y1] = threefry(key_word(k, 0), key_word(k, 1), i64_scalar(0), word);
  return key_of_words(y0, y1);
}

Tensor bits(const Key& k, const Shape& shape) {
  check_key("random.bits", k);
  return bits32(k, shape);
}

Tensor uniform(const Key& k, const Shape& shape, DType dtype, double minval, double maxval) {
  check_float_dtype("random.uniform", dtype);
  return uniform(k, shape, dtype, float_scalar(minval, dtype), float_scalar(maxval, dtype));
}

Tensor uniform(const Key& k, const Shape& shape, DType dtype, const Tensor& minval, const Tensor& maxval) {
  check_key("random.uniform", k);
  check_float_dtype("random.uniform", dtype);
  if (is_half(dtype))  // sampled in f32, then rounded (a sample just below maxval may round to it)
    return astype(uniform(k, shape, f32, astype(minval, f32), astype(maxval, f32)), dtype);
  Tensor lo = broadcast_param("random.uniform", "minval", astype(minval, dtype), shape);
  Tensor hi = broadcast_param("random.uniform", "maxval", astype(maxval, dtype), shape);
  Tensor floats = unit_floats(k, shape, dtype);
  // JAX: max(minval, floats * (maxval - minval) + minval), whose multiply-add XLA fuses (one rounding).
  return lax::max(lo, bind1(prims::fma_p(), {floats, lax::sub(hi, lo), lo}));
}

Tensor normal(const Key& k, const Shape& shape, DType dtype) {
  check_key("random.normal", k);
  check_float_dtype("random.normal", dtype);
  if (is_half(dtype)) return astype(normal(k, shape, f32), dtype);  // sampled in f32, then rounded
  const double lo = dtype == f32 ? double(std::nextafter(-1.0f, 0.0f)) : std::nextafter(-1.0, 0.0);
  const double sqrt2 = dtype == f32 ? double(float(std::sqrt(2.0))) : std::sqrt(2.0);
  Tensor u = uniform(k, shape, dtype, lo, 1.0);
  return lax::mul(float_scalar(sqrt2, dtype), lax::erf_inv(u));
}

Tensor bernoulli(const Key& k, double p, const Shape& shape) { return bernoulli(k, float_scalar(p, f32), shape); }

Tensor bernoulli(const Key& k, const Tensor& p) { return bernoulli(k, p, p.shape()); }

Tensor bernoulli(const Key& k, const Tensor& p, const Shape& shape) {
  check_key("random.bernoulli", k);
  if (!is_floating(p.dtype()))
    detail::fail<DTypeError>("random.bernoulli", "the probability p must be floating, got ", p.aval(),
                             ". Convert it with fx::astype(p, fx::f32).");
  Tensor pb = broadcast_param("random.bernoulli", "p", p, shape);
  return lax::lt(uniform(k, shape, p.dtype()), pb);
}

Tensor categorical(const Key& k, const Tensor& logits, int64_t axis) {
  check_key("random.categorical", k);
  if (!is_floating(logits.dtype()))
    detail::fail<DTypeError>("random.categorical", "logits must be floating, got ", logits.aval(),
                             ". Convert them with fx::astype(logits, fx::f32).");
  const int64_t rank = logits.ndim();
  if (rank == 0 || axis < -rank || axis >= rank)
    detail::fail<AxisError>("random.categorical", "axis ", axis, " is out of range for logits ", logits.aval(),
                            ". The logits need the category axis.");
  if (is_half(logits.dtype())) return categorical(k, astype(logits, f32), axis);  // Gumbel noise in f32
  const DType dt = logits.dtype();
  const double tiny = dt == f32 ? double(std::numeric_limits<float>::min()) : std::numeric_limits<double>::min();
  // Gumbel noise, JAX's mode "low": -log(-log(u)), u uniform in [tiny, 1).
  Tensor u = uniform(k, logits.shape(), dt, tiny, 1.0);
  Tensor gumbel = lax::neg(lax::log(lax::neg(lax::log(u))));
  return lax::argmax(lax::add(gumbel, logits), axis < 0 ? axis + rank : axis, i32);
}

Tensor randint(const Key& k, const Shape& shape, int64_t minval, int64_t maxval, DType dtype) {
  return randint(k, shape, i64_scalar(minval), i64_scalar(maxval), dtype);
}

Tensor randint(const Key& k, const Shape& shape, const Tensor& minval, const Tensor& maxval, DType dtype) {
  check_key("random.randint", k);
  if (dtype != i32)
    detail::fail<DTypeError>("random.randint", "samples i32 (jax.random.randint's dtype without x64), asked for ",
                             dtype, ". Convert the i32 result with fx::astype.");
  if (!is_integer(minval.dtype()) || !is_integer(maxval.dtype()))
    detail::fail<DTypeError>("random.randint", "bounds must be integers, got minval ", minval.aval(), " and maxval ",
                             maxval.aval(), ".");
  const int64_t imax = std::numeric_limits<int32_t>::max(), imin = std::numeric_limits<int32_t>::min();
  Tensor lo64 = broadcast_param("random.randint", "minval", lax::convert_element_type(minval, i64), shape);
  Tensor hi64 = broadcast_param("random.randint", "maxval", lax::convert_element_type(maxval, i64), shape);
  auto c = [](int64_t v) { return i64_scalar(v); };              // rank 0: lax ops broadcast it
  auto c_full = [&](int64_t v) { return full(shape, v, i64); };  // select's operands need the full shape
  // JAX: a maxval beyond the dtype widens the span by one; both bounds clip to the dtype.
  Tensor out_of_range = lax::gt(hi64, c(imax));
  Tensor lo = lax::max(lax::min(lo64, c(imax)), c(imin));
  Tensor hi = lax::max(lax::min(hi64, c(imax)), c(imin));
  std::vector<Key> ks = split(k, 2);
  Tensor higher = bits32(ks[0], shape), lower = bits32(ks[1], shape);
  // span = u32(maxval - minval); 1 when maxval <= minval; +1 (mod 2^32) when maxval was clipped.
  Tensor span = mask_word(lax::sub(hi, lo));
  span = lax::select(lax::le(hi, lo), c_full(1), span);
  span = lax::select(lax::logical_and(out_of_range, lax::gt(hi, lo)), mask_word(lax::add(span, c(1))), span);
  // (higher · 2^32 + lower) % span through multiplier = (2^16 % span)² % span, in u32 arithmetic.
  Tensor multiplier = word_rem(c(1 << 16), span);
  multiplier = word_rem(mask_word(lax::mul(multiplier, multiplier)), span);
  Tensor offset = mask_word(lax::add(mask_word(lax::mul(word_rem(higher, span), multiplier)), word_rem(lower, span)));
  offset = word_rem(offset, span);
  // minval + i32(offset), wrapping in 32 bits like JAX's int32 addition.
  Tensor sum = mask_word(lax::add(lo, offset));
  sum = lax::select(lax::ge(sum, c(int64_t(1) << 31)), lax::sub(sum, c(kTwo32)), sum);
  return lax::convert_element_type(sum, i32);
}

Tensor permutation(const Key& k, int64_t n) {
  check_key("random.permutation", k);
  if (n < 0)
    detail::fail<ShapeError>("random.permutation", "n must be non-negative, got ", n,
                             ". (jax.random.permutation returns an empty array there.)");
  return shuffle(k, lax::iota(i32, Shape{n}, 0));
}

Tensor permutation(const Key& k, const Tensor& x) {
  check_key("random.permutation", k);
  if (x.ndim() == 0)
    detail::fail<ShapeError>("random.permutation", "x must have at least one axis, got ", x.aval(),
                             ". For a permutation of 0..n-1 pass the integer n.");
  if (x.ndim() == 1) return shuffle(k, x);
  return take(x, shuffle(k, lax::iota(i32, Shape{x.shape()[0]}, 0)), 0);
}

Tensor truncated_normal(const Key& k, double lower, double upper, const Shape& shape, DType dtype) {
  check_key("random.truncated_normal", k);
  check_float_dtype("random.truncated_normal", dtype);
  if (is_half(dtype))  // sampled in f32, then rounded (a sample near a bound may round to it)
    return astype(truncated_normal(k, lower, upper, shape, f32), dtype);
  // The bounds are static: erf(bound/√2) and the open-interval clip limits are computed here, in dtype.
  double sqrt2, a, b, lo_in, hi_in;
  if (dtype == f32) {
    const float s = float(std::sqrt(2.0)), lo = float(lower), hi = float(upper);
    sqrt2 = s, a = std::erf(lo / s), b = std::erf(hi / s);
    a = float(a), b = float(b);
    lo_in = std::nextafter(lo, std::numeric_limits<float>::infinity());
    hi_in = std::nextafter(hi, -std::numeric_limits<float>::infinity());
  } else {
    sqrt2 = std::sqrt(2.0), a = std::erf(lower / sqrt2), b = std::erf(upper / sqrt2);
    lo_in = std::nextafter(lower, std::numeric_limits<double>::infinity());
    hi_in = std::nextafter(upper, -std::numeric_limits<double>::infinity());
  }
  Tensor u = uniform(k, shape, dtype, a, b);
  Tensor out = lax::mul(float_scalar(sqrt2, dtype), lax::erf_inv(u));
  return lax::min(lax::max(out, float_scalar(lo_in, dtype)), float_scalar(hi_in, dtype));
}

}  // namespace fluxion::random

namespace fluxion::lax {
Tensor erf_inv(const Tensor& x) { return bind1(primitives::random_detail::erf_inv_p(), {x}); }
}  // namespace fluxion::lax
