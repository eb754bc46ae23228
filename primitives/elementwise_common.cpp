// Shared checks of the elementwise family helpers.
#include "primitives/elementwise.hpp"

#include "fluxion/lax.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives {

void check_arity(const Primitive& self, const std::vector<AbstractValue>& in, size_t expected) {
  if (in.size() != expected)
    detail::fail<ShapeError>(self.name.c_str(), "takes ", expected, " operand(s), got ", in.size(), ".");
}

void check_dtype_in(const Primitive& self, const AbstractValue& a, DTypeSet allowed) {
  if (!allowed.contains(a.dtype))
    detail::fail<DTypeError>(self.name.c_str(), "got an operand of type ", a, "; ", self.name, " accepts ",
                             allowed.describe(), ". Convert it with fx::astype first.");
}

Shape elementwise_binary_shape(const Primitive& self, const AbstractValue& a, const AbstractValue& b) {
  if (a.dtype != b.dtype)
    detail::fail<DTypeError>(self.name.c_str(), "operand dtypes differ: ", a, " and ", b,
                             ". Convert one with fx::astype (the fx:: ops promote automatically).");
  if (a.shape == b.shape || b.ndim() == 0) return a.shape;
  if (a.ndim() == 0) return b.shape;
  detail::fail<ShapeError>(self.name.c_str(), "shapes ", a, " and ", b,
                           " differ. The primitive needs equal shapes (or a rank-0 operand); "
                           "use fx::broadcast_to or the fx:: ops, which broadcast.");
}

Tensor scalar_like(const Tensor& like, double value) { return full(Shape{}, value, like.dtype()); }

void elementwise_batch_rule(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                            const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  int64_t size = batching::batch_size(values, dims);
  // The unbatched shape of the result: that of any operand that is not rank 0.
  std::vector<int64_t> logical;
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t rank = values[i].ndim() - (dims[i] == kNotMapped ? 0 : 1);
    if (rank > 0) {
      logical = values[i].shape().dims();
      if (dims[i] != kNotMapped) logical.erase(logical.begin() + dims[i]);
      break;
    }
  }
  std::vector<int64_t> batched{size};
  batched.insert(batched.end(), logical.begin(), logical.end());
  std::vector<Tensor> args;
  args.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const Tensor& v = values[i];
    if (dims[i] == kNotMapped && v.ndim() == 0) {
      args.push_back(v);  // stays a rank-0 operand
      continue;
    }
    Tensor x = batching::materialize(v, dims[i], size, 0);
    if (x.ndim() == 1 && !logical.empty()) x = lax::broadcast_in_dim(x, Shape(batched), {0});
    args.push_back(x);
  }
  out = fluxion::bind(self, args, params);
  out_dims.assign(out.size(), 0);
}

Tensor unbroadcast(const Tensor& ct, const AbstractValue& operand) {
  if (!ct.defined() || operand.ndim() != 0 || ct.ndim() == 0) return ct;
  std::vector<int64_t> axes(static_cast<size_t>(ct.ndim()));
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  return lax::reduce_sum(ct, axes);
}

Tensor broadcast_scalar_to(const Tensor& t, const Shape& shape) {
  if (!t.defined() || t.ndim() != 0 || shape.size() == 0) return t;
  return lax::broadcast_in_dim(t, shape, {});
}

void linear_jvp_rule(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                     const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  std::vector<Tensor> t = tangents;
  for (size_t i = 0; i < t.size(); ++i)
    if (!t[i].defined()) t[i] = zeros(primals[i].shape(), primals[i].dtype());
  tangents_out = fluxion::bind(self, t, params);
}

void zero_jvp_rule(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>&,
                   const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out.assign(primals_out.size(), Tensor());
}

}  // namespace fluxion::primitives
