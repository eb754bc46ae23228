/// Family helpers for elementwise primitives: one Op struct gives the shape rule and kernels.
///
/// An Op struct provides
///   static constexpr const char* name;      static constexpr DTypeSet dtypes;
///   template <class T> static R scalar(T...);     // shared CPU/CUDA scalar functor
///   template <class A> static auto array(A...);   // optional vectorised Eigen form
///   template <class T> static R reference(T...);  // the spec, computed independently
///   static constexpr TileOp tile;                 // optional: its form in fused register programs
/// R is T, or bool for predicates.
#pragma once
#include <type_traits>
#include <vector>

#include "backends/cpu/elementwise.hpp"
#include "backends/cpu/lowering.hpp"
#include "backends/reference/elementwise.hpp"
#include "fluxion/primitive.hpp"

namespace fluxion::primitives {

/// Result dtype of an elementwise Op applied to elements of dtype `d`.
template <class Op, int Arity> DType elementwise_result_dtype(DType d) {
  return dispatch_dtype(d, [](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!Op::dtypes.contains(dtype_of_v<T>)) {
      return dtype_of_v<T>;
    } else if constexpr (Arity == 1) {
      return dtype_of_v<decltype(Op::scalar(T{}))>;
    } else {
      return dtype_of_v<decltype(Op::scalar(T{}, T{}))>;
    }
  });
}

/// Op::tile (a TileOp) when the Op struct declares one, else TileOp::none.
template <class Op, class = void> struct tile_op_of { static constexpr TileOp value = TileOp::none; };
template <class Op> struct tile_op_of<Op, std::void_t<decltype(Op::tile)>> {
  static constexpr TileOp value = Op::tile;
};

/// Checks the input count; ShapeError naming the primitive otherwise.
void check_arity(const Primitive& self, const std::vector<AbstractValue>& in, size_t expected);
/// Checks `a.dtype` is in `allowed`; DTypeError naming the primitive otherwise.
void check_dtype_in(const Primitive& self, const AbstractValue& a, DTypeSet allowed);
/// Shape of a binary elementwise result: equal shapes, or one rank-0 operand.
Shape elementwise_binary_shape(const Primitive& self, const AbstractValue& a, const AbstractValue& b);

template <class Op> std::vector<AbstractValue> unary_shape_rule(const Primitive& self,
                                                                const std::vector<AbstractValue>& in, const Params&) {
  check_arity(self, in, 1);
  check_dtype_in(self, in[0], Op::dtypes);
  return {AbstractValue{in[0].shape, elementwise_result_dtype<Op, 1>(in[0].dtype)}};
}

template <class Op> std::vector<AbstractValue> binary_shape_rule(const Primitive& self,
                                                                 const std::vector<AbstractValue>& in, const Params&) {
  check_arity(self, in, 2);
  check_dtype_in(self, in[0], Op::dtypes);
  check_dtype_in(self, in[1], Op::dtypes);
  Shape s = elementwise_binary_shape(self, in[0], in[1]);
  return {AbstractValue{std::move(s), elementwise_result_dtype<Op, 2>(in[0].dtype)}};
}

/// Traits of an elementwise primitive.
inline Traits elementwise_traits(bool linear = false, bool commutative = false) {
  Traits t;
  t.elementwise = true;
  t.linear = linear;
  t.commutative = commutative;
  return t;
}

/// A rank-0 tensor of `like`'s dtype holding `value` (constants inside derivative rules).
Tensor scalar_like(const Tensor& like, double value);

/// Batching rule shared by every elementwise primitive: mapped operands get their batch axis
/// moved to the front; unmapped rank-0 operands stay rank-0 (primitives broadcast them); other
/// operands are broadcast to the batched shape. Output batch axis 0.
void elementwise_batch_rule(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                            const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims);

/// Cotangent of a binary operand of aval `operand` from `ct`, the cotangent of its contribution to
/// the output: reduce_sum over every axis when the operand was a broadcast rank-0 one, else `ct`.
/// Undefined (symbolic zero) stays undefined.
Tensor unbroadcast(const Tensor& ct, const AbstractValue& operand);

/// `t` broadcast to `shape` when it is a rank-0 operand of a rank-n result (broadcast_in_dim),
/// else `t`. Undefined (symbolic zero) stays undefined.
Tensor broadcast_scalar_to(const Tensor& t, const Shape& shape);

/// jvp rule of a primitive that is linear in all its inputs: the primitive applied to the
/// tangents (symbolic zeros instantiated only when some tangent is nonzero).
void linear_jvp_rule(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                     const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out);

/// jvp rule of primitives with zero derivative (floor, sign, comparisons, stop_gradient...).
void zero_jvp_rule(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                   const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out);

/// jvp rule of a unary Op with `static Tensor derivative(x, y, t)` giving the output tangent.
template <class Op> void unary_jvp_rule(const Primitive& self, const std::vector<Tensor>& primals,
                                        const std::vector<Tensor>& tangents, const Params& params,
                                        std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  tangents_out = {Op::derivative(primals[0], primals_out[0], tangents[0])};
}

/// A unary elementwise primitive from its Op struct.
template <class Op> Primitive make_unary(Traits traits = elementwise_traits()) {
  Primitive p;
  p.name = Op::name;
  p.traits = traits;
  p.shape_rule = &unary_shape_rule<Op>;
  p.kernels[static_cast<size_t>(Backend::reference)] = &reference::unary_kernel<Op>;
  if constexpr (kLightKernels) p.kernels[static_cast<size_t>(Backend::cpu)] = &reference::unary_kernel<Op>;
  else p.kernels[static_cast<size_t>(Backend::cpu)] = &cpu::unary_kernel<Op>;
  p.block = &cpu::unary_block<Op>;
  p.tile_op = tile_op_of<Op>::value;
  p.batch = &elementwise_batch_rule;
  return p;
}

/// A binary elementwise primitive from its Op struct.
template <class Op> Primitive make_binary(Traits traits = elementwise_traits()) {
  Primitive p;
  p.name = Op::name;
  p.traits = traits;
  p.shape_rule = &binary_shape_rule<Op>;
  p.kernels[static_cast<size_t>(Backend::reference)] = &reference::binary_kernel<Op>;
  if constexpr (kLightKernels) p.kernels[static_cast<size_t>(Backend::cpu)] = &reference::binary_kernel<Op>;
  else p.kernels[static_cast<size_t>(Backend::cpu)] = &cpu::binary_kernel<Op>;
  p.block = &cpu::binary_block<Op>;
  p.row_block = &cpu::binary_row_block<Op>;
  p.tile_op = tile_op_of<Op>::value;
  p.batch = &elementwise_batch_rule;
  return p;
}

}  // namespace fluxion::primitives
