// Primitives of the random family (fx::random::, src/ops_random.cpp composes the distributions):
//  - threefry2x32 (k0, k1, x0, x1) -> (y0, y1): the counter-based block cipher behind jax.random, on
//    i64 words holding 32-bit unsigned values; operands of one shape or rank 0 (broadcast).
//    Integer outputs, so a zero derivative; batching is the elementwise rule.
//  - erf_inv: the inverse error function (f32, f64), XLA's polynomials (primitives/random.hpp), so
//    fx::random::normal reproduces jax.random.normal. jvp: sqrt(pi)/2 exp(erf_inv(x)²) t.
//    The reference inverts erf by Newton steps in long double: an independent computation.
//  - fma (a, b, c) -> a·b + c rounded once: XLA contracts uniform's floats·(maxval - minval) +
//    minval into a fused multiply-add, so the bits need one. Operands of one float dtype, one
//    shape or rank 0; jvp da·b + a·db + dc; batching is the elementwise rule.
//  - permute_by_keys (keys, values): values reordered along the last axis by ascending i64 keys,
//    stably; the sort inside jax.random.permutation. Linear in values: the jvp permutes the
//    tangent, the transpose applies the inverse permutation (a permute_by_keys whose keys are the
//    forward permutation). Batching moves the batch axis to the front.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "fluxion/lax.hpp"
#include "primitives/builder.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/random.hpp"
#include "primitives/registry.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives {
namespace random_detail {

// ---- threefry2x32 ----

std::vector<AbstractValue> threefry_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                               const Params&) {
  check_arity(self, in, 4);
  const char* names[4] = {"k0", "k1", "x0", "x1"};
  Shape out;
  for (size_t i = 0; i < 4; ++i) {
    if (in[i].dtype != i64)
      detail::fail<DTypeError>(self.name.c_str(), "operand ", names[i], " is ", in[i],
                               "; threefry2x32 takes i64 words holding 32-bit unsigned values. Convert with "
                               "fx::astype(x, fx::i64).");
    if (in[i].ndim() == 0) continue;
    if (out.size() == 0) out = in[i].shape;
    else if (!(in[i].shape == out))
      detail::fail<ShapeError>(self.name.c_str(), "operand shapes differ: ", names[i], " is ", in[i],
                               " but an earlier operand has shape ", AbstractValue{out, i64},
                               ". Give the words one shape (or rank 0, which broadcasts).");
  }
  return {AbstractValue{out, i64}, AbstractValue{out, i64}};
}

/// Reads the low 32 bits of word i of an operand (stride 0 for a broadcast rank-0 one).
inline unsigned word(const Tensor& t, int64_t i) {
  return static_cast<unsigned>(static_cast<uint64_t>(t.data<int64_t>()[t.ndim() == 0 ? 0 : i]) & 0xFFFFFFFFu);
}

/// The spec: the cipher written out round by round with its key schedule in an array of five
/// injections (Salmon et al., Random123's threefry2x32 with 20 rounds).
void threefry_reference(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  static const int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  int64_t* y0 = out[0].mutable_data<int64_t>();
  int64_t* y1 = out[1].mutable_data<int64_t>();
  for (int64_t i = 0, n = out[0].size(); i < n; ++i) {
    const uint32_t k0 = word(in[0], i), k1 = word(in[1], i);
    const uint32_t key[3] = {k0, k1, static_cast<uint32_t>(k0 ^ k1 ^ 0x1BD11BDAu)};
    uint32_t a = word(in[2], i) + key[0], b = word(in[3], i) + key[1];
    for (int round = 0; round < 20; ++round) {
      const int r = kRot[round % 8];
      a = a + b;
      b = static_cast<uint32_t>((b << r) | (b >> (32 - r))) ^ a;
      if (round % 4 == 3) {  // key injection s = round / 4 + 1
        const int s = round / 4 + 1;
        a += key[s % 3];
        b += key[(s + 1) % 3] + static_cast<uint32_t>(s);
      }
    }
    y0[i] = a;
    y1[i] = b;
  }
}

void threefry_cpu(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  int64_t* y0 = out[0].mutable_data<int64_t>();
  int64_t* y1 = out[1].mutable_data<int64_t>();
  for (int64_t i = 0, n = out[0].size(); i < n; ++i) {
    unsigned a, b;
    threefry2x32_block(word(in[0], i), word(in[1], i), word(in[2], i), word(in[3], i), a, b);
    y0[i] = a;
    y1[i] = b;
  }
}

const Primitive& threefry2x32_p() {
  static const Primitive& p = define_primitive("threefry2x32")
                                  .shape(&threefry_shape_rule)
                                  .reference(&threefry_reference)
                                  .cpu(&threefry_cpu)
                                  .jvp(&zero_jvp_rule)
                                  .batch(&elementwise_batch_rule)
                                  .build();
  return p;
}

// ---- erf_inv ----

struct ErfInv {
  static constexpr const char* name = "erf_inv";
  static constexpr DTypeSet dtypes = kFloating;
  template <class T> static T scalar(T x) { return erf_inv_scalar(x); }
  /// erf(y) = x solved by Newton's method in long double from the approximation, rounded once.
  template <class T> static T reference(T x) {
    using L = long double;
    if (std::isnan(x) || std::fabs(x) > T(1)) return std::numeric_limits<T>::quiet_NaN();
    if (std::fabs(x) == T(1)) return x / T(0);
    L y = static_cast<L>(erf_inv_scalar(static_cast<double>(x)));
    if (!std::isfinite(static_cast<double>(y))) return static_cast<T>(y);
    for (int step = 0; step < 4; ++step) {
      const L slope = 2 / std::sqrt(L(3.14159265358979323846264338327950288L)) * std::exp(-y * y);
      if (slope == 0) break;
      y -= (std::erf(y) - L(x)) / slope;
    }
    return static_cast<T>(y);
  }
  // d erf_inv(x) / dx = sqrt(pi)/2 · exp(erf_inv(x)²).
  static Tensor derivative(const Tensor&, const Tensor& y, const Tensor& t) {
    return lax::mul(t, lax::mul(scalar_like(y, 0.88622692545275801365), lax::exp(lax::mul(y, y))));
  }
};

const Primitive& erf_inv_p() {
  static const Primitive& p = unary_builder<ErfInv>().jvp(&unary_jvp_rule<ErfInv>).build();
  return p;
}

// ---- fma ----

std::vector<AbstractValue> fma_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in, const Params&) {
  check_arity(self, in, 3);
  for (const AbstractValue& a : in) check_dtype_in(self, a, kFloating);
  Shape s = elementwise_binary_shape(self, in[0], in[1]);
  AbstractValue ab{s, in[0].dtype};
  return {AbstractValue{elementwise_binary_shape(self, ab, in[2]), in[0].dtype}};
}

/// The spec: IEEE 754's fusedMultiplyAdd, which the C library computes correctly rounded (the
/// kernels use the same operation through the shared fused_multiply_add, hardware FMA where present).
template <class T> T fma_reference(T a, T b, T c) { return std::fma(a, b, c); }

template <bool Reference> void fma_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  dispatch_dtype(out[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      const T *a = in[0].data<T>(), *b = in[1].data<T>(), *c = in[2].data<T>();
      const int64_t sa = in[0].ndim() == 0 ? 0 : 1, sb = in[1].ndim() == 0 ? 0 : 1, sc = in[2].ndim() == 0 ? 0 : 1;
      T* y = out[0].mutable_data<T>();
      for (int64_t i = 0, n = out[0].size(); i < n; ++i) {
        if constexpr (Reference) y[i] = fma_reference(a[i * sa], b[i * sb], c[i * sc]);
        else y[i] = fused_multiply_add(a[i * sa], b[i * sb], c[i * sc]);
      }
    }
  });
}

// d(a·b + c) = da·b + a·db + dc; undefined tangents are zeros.
void fma_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
             const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  const Shape& shape = primals_out[0].shape();
  Tensor t;
  auto accumulate = [&](const Tensor& term) {
    Tensor full_term = broadcast_scalar_to(term, shape);
    t = t.defined() ? lax::add(t, full_term) : full_term;
  };
  if (tangents[0].defined())
    accumulate(lax::mul(broadcast_scalar_to(tangents[0], shape), broadcast_scalar_to(primals[1], shape)));
  if (tangents[1].defined())
    accumulate(lax::mul(broadcast_scalar_to(primals[0], shape), broadcast_scalar_to(tangents[1], shape)));
  if (tangents[2].defined()) accumulate(tangents[2]);
  tangents_out = {t};
}

const Primitive& fma_p() {
  static const Primitive& p = define_primitive("fma")
                                  .shape(&fma_shape_rule)
                                  .reference(&fma_kernel<true>)
                                  .cpu(&fma_kernel<false>)
                                  .jvp(&fma_jvp)
                                  .batch(&elementwise_batch_rule)
                                  .build();
  return p;
}

// ---- permute_by_keys ----

std::vector<AbstractValue> permute_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                              const Params&) {
  check_arity(self, in, 2);
  const AbstractValue &keys = in[0], &values = in[1];
  if (keys.dtype != i64)
    detail::fail<DTypeError>(self.name.c_str(), "keys must be i64, got ", keys,
                             ". Convert them with fx::astype(keys, fx::i64).");
  if (values.ndim() == 0)
    detail::fail<ShapeError>(self.name.c_str(), "values must have at least one axis (it permutes the last), got ",
                             values, ". Reshape a scalar to shape [1].");
  if (!(keys.shape == values.shape))
    detail::fail<ShapeError>(self.name.c_str(), "keys ", keys, " and values ", values,
                             " must have the same shape: one key per value.");
  return {values};
}

/// Row r's order: indices 0..n-1 sorted by key, ties by index (a stable sort).
template <bool Reference> void row_order(const int64_t* keys, int64_t n, std::vector<int64_t>& order) {
  order.resize(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if constexpr (Reference) {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
  } else {  // (key, index) pairs are distinct, so an unstable sort of them is stable in the keys
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t b) { return keys[a] < keys[b] || (keys[a] == keys[b] && a < b); });
  }
}

template <bool Reference> void permute_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  const int64_t n = in[1].shape()[in[1].ndim() - 1];
  const int64_t rows = n == 0 ? 0 : in[1].size() / n;
  const int64_t* keys = in[0].data<int64_t>();
  dispatch_dtype(in[1].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* v = in[1].data<T>();
    T* y = out[0].mutable_data<T>();
    std::vector<int64_t> order;
    for (int64_t r = 0; r < rows; ++r) {
      row_order<Reference>(keys + r * n, n, order);
      for (int64_t j = 0; j < n; ++j) y[r * n + j] = v[r * n + order[static_cast<size_t>(j)]];
    }
  });
}

// Linear in values: the tangent takes the same permutation (keys carry no tangent).
void permute_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                 const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out = {tangents[1].defined() ? fluxion::bind1(self, {primals[0], tangents[1]}, params) : Tensor()};
}

// out[j] = v[order[j]], so ct_v[order[j]] = ct[j]: sorting ct by the keys order[j] (distinct)
// puts ct[j] at position order[j]. order itself is the permutation applied to 0..n-1.
void permute_transpose(const Primitive& self, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                       const std::vector<AbstractValue>& in_avals, const Params& params, std::vector<Tensor>& cts_in) {
  if (!inputs[0].defined())
    detail::fail<Error>(self.name.c_str(), "internal: transpose with unknown keys (it is linear in values only).");
  if (!cts_out[0].defined() || inputs[1].defined()) return;
  const Shape& shape = in_avals[1].shape;
  Tensor positions = lax::iota(i64, shape, shape.size() - 1);
  Tensor order = fluxion::bind1(self, {inputs[0], positions}, params);
  cts_in[1] = fluxion::bind1(self, {order, cts_out[0]}, params);
}

// Leading axes are independent rows: the batch axis goes to the front of both operands.
void permute_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                   const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const int64_t size = batching::batch_size(values, dims);
  Tensor keys = batching::materialize(values[0], dims[0], size, 0);
  Tensor vals = batching::materialize(values[1], dims[1], size, 0);
  out = fluxion::bind(self, {keys, vals}, params);
  out_dims = {0};
}

const Primitive& permute_by_keys_p() {
  static const Primitive& p = define_primitive("permute_by_keys")
                                  .shape(&permute_shape_rule)
                                  .reference(&permute_kernel<true>)
                                  .cpu(&permute_kernel<false>)
                                  .jvp(&permute_jvp)
                                  .transpose(&permute_transpose)
                                  .batch(&permute_batch)
                                  .build();
  return p;
}

}  // namespace random_detail

void register_random(std::vector<const Primitive*>& list) {
  using namespace random_detail;
  list.insert(list.end(), {&threefry2x32_p(), &erf_inv_p(), &fma_p(), &permute_by_keys_p()});
}

}  // namespace fluxion::primitives
