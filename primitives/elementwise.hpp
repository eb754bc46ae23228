/// Family helpers for elementwise primitives: one Op struct gives the shape rule and kernels.
///
/// An Op struct provides
///   static constexpr const char* name;      static constexpr DTypeSet dtypes;
///   template <class T> static R scalar(T...);     // shared CPU/CUDA scalar functor
///   template <class A> static auto array(A...);   // optional vectorised Eigen form
///   template <class T> static R reference(T...);  // the spec, computed independently
///   using Packet = F;                             // optional: the CPU functor its float forms apply
///                                                 // (its fused register-program form derives from it)
/// R is T, or bool for predicates.
#pragma once
#include <type_traits>
#include <vector>

#include "backends/cpu/elementwise.hpp"
#include "backends/reference/elementwise.hpp"
#include "fluxion/primitive.hpp"
#include "primitives/builder.hpp"

namespace fluxion::primitives {

/// Result dtype of an elementwise Op applied to elements of dtype `d`.
template <class Op, int Arity> DType elementwise_result_dtype(DType d) {
  if (is_half(d)) {  // computed in f32: a floating result keeps the half dtype, a predicate stays bool
    const DType r = elementwise_result_dtype<Op, Arity>(f32);
    return r == f32 ? d : r;
  }
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

/// The CPU kernels of an elementwise Op: the Eigen ones, or the reference loops with light kernels
/// (whose point is not to instantiate the Eigen ones).
template <class Op> constexpr Kernel cpu_unary_kernel() {
  if constexpr (kLightKernels) return &reference::unary_kernel<Op>;
  else return &cpu::unary_kernel<Op>;
}
template <class Op> constexpr Kernel cpu_binary_kernel() {
  if constexpr (kLightKernels) return &reference::binary_kernel<Op>;
  else return &cpu::binary_kernel<Op>;
}

/// The builder of a unary elementwise primitive from its Op struct: shape rule, kernels, CPU
/// lowering (block kernel, register-program operation) and batching rule; the caller adds traits
/// beyond elementwise and the differentiation rules.
template <class Op> PrimitiveBuilder unary_builder() {
  PrimitiveBuilder b(Op::name);
  b.elementwise()
      .shape(&unary_shape_rule<Op>)
      .reference(&reference::unary_kernel<Op>)
      .cpu(cpu_unary_kernel<Op>())
      .cpu_lowering({&cpu::unary_block<Op>, nullptr, cpu::tile_op_of<Op>::value})
      .batch(&elementwise_batch_rule);
  return b;
}

/// The builder of a binary elementwise primitive from its Op struct (as unary_builder, with the
/// row form of its block kernel).
template <class Op> PrimitiveBuilder binary_builder() {
  PrimitiveBuilder b(Op::name);
  b.elementwise()
      .shape(&binary_shape_rule<Op>)
      .reference(&reference::binary_kernel<Op>)
      .cpu(cpu_binary_kernel<Op>())
      .cpu_lowering({&cpu::binary_block<Op>, &cpu::binary_row_block<Op>, cpu::tile_op_of<Op>::value})
      .batch(&elementwise_batch_rule);
  return b;
}

}  // namespace fluxion::primitives
