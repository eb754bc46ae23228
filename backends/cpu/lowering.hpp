/// The CPU lowering table (slot 2 of runtime/backend.hpp for the CPU): per primitive, the forms its
/// equations take inside the CPU runner's fused and tiled steps. A primitive files its entry when
/// it is built (PrimitiveBuilder::cpu_lowering, primitives/builder.hpp); planning asks through the
/// CPU runner's runtime::Lowering (backends/cpu/plan_runner.cpp), and the runner's lower() copies
/// the kernels into each fused step's FusedLowering. Nothing here is read by a primitive's rules
/// or by planning directly.
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "fluxion/primitive.hpp"

namespace fluxion::cpu {

/// Elementwise kernel over one block of `n` elements, used by fused steps: in[i] points at n
/// elements of dtype `in_dtype`, or at one element when scalar[i] (broadcast). `out` receives n
/// elements of the result dtype `out_dtype`.
using BlockKernel = void (*)(DType in_dtype, const void* const* in, const bool* scalar, void* out, int64_t n,
                             DType out_dtype);

/// Row form of a BlockKernel, for operands constant along runs of `row` consecutive elements (a
/// broadcast along trailing dims, which fused steps then never materialise): in[i] with rows[i]
/// holds one value per run, the first for the run holding element 0, which is element `offset` of
/// its run. Other operands as in BlockKernel.
using RowBlockKernel = void (*)(DType in_dtype, const void* const* in, const bool* scalar, const bool* rows,
                                int64_t row, int64_t offset, void* out, int64_t n, DType out_dtype);

/// How a kernel's output can be computed by rectangles (products): viewed as an m x n row-major
/// matrix, from an m x k and a k x n operand; `data` is the primitive's own (operand layout).
/// m == 0: not tileable for these inputs.
struct TilePlan {
  int64_t m = 0, n = 0;
  int64_t k = 0;  // elements each output element reads per operand (a product's contraction)
  int64_t data[4] = {0, 0, 0, 0};
};
/// The TilePlan of a primitive for input avals and params (computed once per plan).
using TileRule = TilePlan (*)(const std::vector<AbstractValue>& inputs, const Params& params);
/// Rows [r0, r1) x columns [c0, c1) of the output (TilePlan's matrix view) into `out`, rows `ld`
/// elements apart, on the calling thread. The runner runs the fused step reading the output on
/// each tile while it is in cache, and never stores the whole output.
using TileKernel = void (*)(const TilePlan& plan, const std::vector<Tensor>& inputs, int64_t r0, int64_t r1, int64_t c0,
                            int64_t c1, void* out, int64_t ld);

/// The operations of fused register programs (backends/cpu/tile_program.hpp). A primitive's
/// operation is derived from its scalar functor (tile_op_of), never declared by the primitive.
enum class TileOp : uint8_t { none, neg, exp, log, sqrt, tanh, add, sub, mul, div };

/// One primitive's entry. Empty members: that form does not exist (the equation runs as its own
/// kernel step, or its fused step takes the block path).
struct Lowering {
  BlockKernel block = nullptr;         // member of fused steps (elementwise primitives)
  RowBlockKernel row_block = nullptr;  // reads broadcast operands by rows inside fused steps
  TileOp tile_op = TileOp::none;       // register-program operation
  TileRule tile_plan = nullptr;        // computed tile by tile inside the fused step reading it
  TileKernel tile = nullptr;
  bool empty() const { return !block && !row_block && tile_op == TileOp::none && !tile_plan && !tile; }
};

/// Files `lowering` as `p`'s entry (replacing any). Thread-safe.
void set_lowering(const Primitive& p, const Lowering& lowering);
/// `p`'s entry, or nullptr. Thread-safe; entries never move once filed.
const Lowering* find_lowering(const Primitive& p);

/// The register-program operation of a scalar functor type: the functors that the programs
/// implement (their packet forms are the ones the programs run: backends/cpu/unary_packets.hpp
/// and binary_ops below) map to their TileOp, everything else to TileOp::none.
namespace unary_ops {
struct Neg;
struct Exp;
struct Log;
struct Sqrt;
struct Tanh;
}  // namespace unary_ops
namespace binary_ops {
struct Add;
struct Sub;
struct Mul;
struct Div;
}  // namespace binary_ops
template <class F> constexpr TileOp packet_tile_op() {
  if constexpr (std::is_same_v<F, unary_ops::Neg>) return TileOp::neg;
  else if constexpr (std::is_same_v<F, unary_ops::Exp>) return TileOp::exp;
  else if constexpr (std::is_same_v<F, unary_ops::Log>) return TileOp::log;
  else if constexpr (std::is_same_v<F, unary_ops::Sqrt>) return TileOp::sqrt;
  else if constexpr (std::is_same_v<F, unary_ops::Tanh>) return TileOp::tanh;
  else if constexpr (std::is_same_v<F, binary_ops::Add>) return TileOp::add;
  else if constexpr (std::is_same_v<F, binary_ops::Sub>) return TileOp::sub;
  else if constexpr (std::is_same_v<F, binary_ops::Mul>) return TileOp::mul;
  else if constexpr (std::is_same_v<F, binary_ops::Div>) return TileOp::div;
  else return TileOp::none;
}

/// An elementwise Op struct's register-program operation: that of `typename Op::Packet`, the
/// functor its floating-point scalar and array forms apply (none when it has no Packet).
template <class Op, class = void> struct tile_op_of { static constexpr TileOp value = TileOp::none; };
template <class Op> struct tile_op_of<Op, std::void_t<typename Op::Packet>> {
  static constexpr TileOp value = packet_tile_op<typename Op::Packet>();
};

}  // namespace fluxion::cpu
