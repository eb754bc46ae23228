// gram: out = xᵀ diag(s) x, out[a, b] = Σ_n x[n, a] s[n] x[n, b], for x [N, D] and s [N] of one
// floating dtype; out is [D, D] and symmetric (the Hessian of GLM-type losses; the simplifier
// rewrites dot_general(xᵀ diag(s), x)-shaped products into it). N = 0 gives zeros.
// The CPU kernel (backends/cpu/gram.hpp) scales the rows of x by s into a scratch buffer, computes
// only the lower triangle of xᵀ (s x), one block row of 128 rows per GEMM (about half the
// multiply-adds of the full product), and mirrors it: the result is exactly symmetric. Measured (bench/RESULTS.md)
// at f64, N = D = 1000, one thread, medians of 21 interleaved calls on a shared
// 2-core machine): 35 ms, against 44 ms for the full dot_general and 37 ms for Eigen's
// selfadjointView<Lower>().rankUpdate (42 ms with its row scaling and mirroring). Block rows were
// 10-15 % faster than halving the triangle recursively (many small diagonal GEMMs); block heights
// of 64 to 256 rows are within noise.
// The reference is the plain triple loop in long double, rounded once.
// Rules: jvp dout = P + Pᵀ + gram(x, ds) with P = dxᵀ (s x); transpose (linear in s only, for a
// known x) ct_s[n] = Σ_b (x ct)[n, b] x[n, b]; batching with a shared x scales a broadcast copy of
// x per example and makes one dot_general, with a mapped x one batched dot_general. Not linear in
// every input, so no traits.
#include "backends/cpu/gram.hpp"
#include "fluxion/lax.hpp"
#include "primitives/builder.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/gram.hpp"
#include "primitives/registry.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives {
namespace gram_detail {

std::vector<AbstractValue> gram_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in, const Params&) {
  check_arity(self, in, 2);
  const AbstractValue &x = in[0], &s = in[1];
  const char* name = self.name.c_str();
  if (!kFloating.contains(x.dtype) || !kFloating.contains(s.dtype))
    detail::fail<DTypeError>(name, "needs floating operands (f32 or f64), got x ", x, " and s ", s,
                             ". Convert them with fx::astype.");
  if (x.dtype != s.dtype)
    detail::fail<DTypeError>(name, "operand dtypes differ: x ", x, " and s ", s, ". Convert one with fx::astype.");
  if (x.ndim() != 2)
    detail::fail<ShapeError>(name, "x must be a matrix [N, D], got ", x,
                             ". Reshape it to [N, D] (one row per observation).");
  if (s.ndim() != 1)
    detail::fail<ShapeError>(name, "s must be a vector [N], got ", s, ". Reshape it to [N] (one weight per row of x).");
  if (s.shape[0] != x.shape[0])
    detail::fail<ShapeError>(name, "s ", s, " has ", s.shape[0], " elements but x ", x, " has ", x.shape[0],
                             " rows. s needs one weight per row of x.");
  return {AbstractValue{Shape{x.shape[1], x.shape[1]}, x.dtype}};
}

/// Reference: every entry of the lower triangle summed in long double in row order, rounded once,
/// and mirrored (the spec is symmetric too).
template <class T> void gram_reference(const T* x, const T* s, T* out, int64_t n, int64_t d) {
  using L = long double;
  for (int64_t a = 0; a < d; ++a)
    for (int64_t b = 0; b <= a; ++b) {
      L acc = 0;
      for (int64_t i = 0; i < n; ++i)
        acc += static_cast<L>(x[i * d + a]) * static_cast<L>(s[i]) * static_cast<L>(x[i * d + b]);
      out[a * d + b] = out[b * d + a] = static_cast<T>(acc);
    }
}

template <bool Reference> void gram_kernel(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  const int64_t n = in[0].shape()[0], d = in[0].shape()[1];
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      if constexpr (Reference) gram_reference(in[0].data<T>(), in[1].data<T>(), out[0].mutable_data<T>(), n, d);
      else cpu::gram(in[0].data<T>(), in[1].data<T>(), out[0].mutable_data<T>(), n, d);
    }
  });
}

// ---- differentiation and batching rules ----

/// x [..., N, D] with row n scaled by s[..., n]: s broadcast along the last dim (batch dims lead).
Tensor scaled_rows(const Tensor& x, const Tensor& s) {
  std::vector<int64_t> dims(static_cast<size_t>(s.ndim()));
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(i);
  return lax::mul(x, lax::broadcast_in_dim(s, x.shape(), dims));
}

// d(xᵀ S x) = dxᵀ S x + xᵀ S dx + xᵀ dS x = P + Pᵀ + gram(x, ds), P = dxᵀ (s x); undefined tangents
// are zero, and both undefined leave the output tangent undefined.
void gram_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
              const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  const Tensor &x = primals[0], &s = primals[1], &dx = tangents[0], &ds = tangents[1];
  Tensor t;
  if (dx.defined()) {
    Tensor p = lax::dot_general(dx, scaled_rows(x, s), {{0}, {0}});
    t = lax::add(p, lax::transpose(p, {1, 0}));
  }
  if (ds.defined()) {
    Tensor g = fluxion::bind1(self, {x, ds}, params);
    t = t.defined() ? lax::add(t, g) : g;
  }
  tangents_out = {t};
}

// Linear in s for a known x: <ct, xᵀ diag(s) x> = Σ_n s[n] Σ_{a,b} x[n,a] ct[a,b] x[n,b].
void gram_transpose(const Primitive& self, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                    const std::vector<AbstractValue>&, const Params&, std::vector<Tensor>& cts_in) {
  if (!inputs[0].defined())
    detail::fail<Error>(self.name.c_str(),
                        "internal: transpose with a linear x (gram is linear in s only, "
                        "for a known x).");
  if (!cts_out[0].defined() || inputs[1].defined()) return;
  const Tensor& x = inputs[0];
  Tensor x_ct = lax::dot_general(x, cts_out[0], {{1}, {0}});  // [N, D]: Σ_a x[n,a] ct[a,b]
  cts_in[1] = lax::reduce_sum(lax::mul(x_ct, x), {1});
}

// Shared x, mapped s [B, N]: the examples' scaled copies of x, [B, N, D], contracted with x in one
// dot_general. Mapped x: both operands batched at the front (an unmapped s broadcast), one
// batched dot_general. Either way out is [B, D, D].
void gram_batch(const Primitive&, const std::vector<Tensor>& values, const std::vector<int64_t>& dims, const Params&,
                std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  out_dims = {0};
  if (dims[0] == kNotMapped) {
    const Tensor& x = values[0];
    Tensor s = batching::move_axis(values[1], dims[1], 0);
    const Shape shape{s.shape()[0], x.shape()[0], x.shape()[1]};
    Tensor xs = scaled_rows(lax::broadcast_in_dim(x, shape, {1, 2}), s);
    out = {lax::dot_general(xs, x, {{1}, {0}})};
    return;
  }
  const int64_t size = batching::batch_size(values, dims);
  Tensor x = batching::move_axis(values[0], dims[0], 0);
  Tensor s = batching::materialize(values[1], dims[1], size, 0);
  out = {lax::dot_general(scaled_rows(x, s), x, {{1}, {1}}, {{0}, {0}})};
}

const Primitive& gram_p() {
  static const Primitive& p = define_primitive("gram")
                                  .shape(&gram_shape_rule)
                                  .reference(&gram_kernel<true>)
                                  .cpu(&gram_kernel<kLightKernels>)
                                  .jvp(&gram_jvp)
                                  .transpose(&gram_transpose)
                                  .batch(&gram_batch)
                                  .build();
  return p;
}

}  // namespace gram_detail

void register_gram(std::vector<const Primitive*>& list) { list.push_back(&gram_detail::gram_p()); }

}  // namespace fluxion::primitives

namespace fluxion::lax {
Tensor gram(const Tensor& x, const Tensor& s) { return bind1(primitives::gram_detail::gram_p(), {x, s}); }
}  // namespace fluxion::lax
