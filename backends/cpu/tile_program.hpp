/// Fused tile programs: a fused elementwise group run as one loop over tiles of kTilePackets
/// vector packets, each member an instruction on an accumulator tile held in registers. Along a
/// chain (each member reading the one before) values never leave the registers; a value read
/// again later is stored to a scratch tile in L1. Against the block path (each member its own
/// pass over a 1024-element block, storing and reloading between members) this is the difference
/// between a fused gradient group at 1.6x and about 1.1x the hand-fused Eigen loop (measured:
/// bench/RESULTS.md).
///
/// The operations are the primitives' own (TileOp, derived from the primitive's scalar functor:
/// cpu::tile_op_of in lowering.hpp); the values are those of the block kernels' vector path (the
/// same packet functions, backends/cpu/unary_packets.hpp and binary_ops.hpp).
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/binary_ops.hpp"
#include "backends/cpu/lowering.hpp"
#include "backends/cpu/unary_packets.hpp"

namespace fluxion::cpu {

/// Packets per tile: four independent chains hide the latency of exp and tanh, and the
/// accumulator plus exp's or tanh's temporaries stay within the 32 vector registers.
inline constexpr int kTilePackets = 4;

/// Sum instructions a program may hold (their partial sums live on the stack).
inline constexpr int kMaxTileSums = 4;

/// Tiles whose sums a sum instruction adds in T before adding them into its double partial sums:
/// each lane then adds 4 * kSumFlushTiles elements in T (for f32 an error of at most ~32 ulp of
/// that partial, against the converts and double adds of every tile).
inline constexpr int64_t kSumFlushTiles = 8;

/// Elements of one tile of T.
template <class T> constexpr int64_t tile_elements() { return kTilePackets * Eigen::internal::packet_traits<T>::size; }

/// One instruction. The accumulator tile is `acc`; the operand (`source`) is an external array
/// (its base pointer bases[index], read at the tile's offset), a scratch tile (slot `index`), one
/// value broadcast over the tile (`scalar`: a literal, or bases[index] when `literal` is null), or
/// the accumulator itself. A negated product (`nmul`, made from a mul followed by a neg, see
/// contract_negated_products) computes -(acc * operand) as one multiply-add. `code` (tile_code, set
/// by finish()) is what the interpreter dispatches on: one indirect jump per instruction.
struct TileInstr {
  enum Kind : uint8_t { load, unary, binary, store, sum, nmul } kind = load;
  enum Source : uint8_t { external, scratch, scalar, self } source = external;
  TileOp op = TileOp::none;
  bool reversed = false;  // binary: acc = op(operand, acc) instead of op(acc, operand)
  int32_t index = 0;      // external index, scratch slot, or sum: accumulator set
  const void* literal = nullptr;
  uint16_t code = 0;
  void finish();
};

/// Handlers of the interpreter (tile_code's range).
inline constexpr int kTileCodes = 39 + 4;

/// The interpreter's case for an instruction's kind, operation, operand sources and order: dense
/// (0..kTileCodes-1), so the dispatch is one table (sparse case values made a switch a tree of
/// compares and branches).
constexpr uint16_t tile_code(TileInstr::Kind kind, TileOp op, TileInstr::Source source, bool reversed) {
  const int o = static_cast<int>(op), src = static_cast<int>(source);
  switch (kind) {
    case TileInstr::load: return static_cast<uint16_t>(src);                                     // 0..2
    case TileInstr::unary: return static_cast<uint16_t>(3 + o - static_cast<int>(TileOp::neg));  // 3..7
    case TileInstr::binary:                                                                      // 8..35
      return static_cast<uint16_t>(8 + (o - static_cast<int>(TileOp::add)) * 7 + src * 2 + (reversed ? 1 : 0));
    case TileInstr::store: return source == TileInstr::scratch ? 36 : 37;
    case TileInstr::nmul: return static_cast<uint16_t>(39 + src);  // 39..42
    default: return 38;
  }
}
inline void TileInstr::finish() {
  if (source == self && kind == binary) reversed = false;  // op(acc, acc) either way
  code = tile_code(kind, op, source, reversed);
}

namespace tile_detail {
namespace ei = Eigen::internal;

// Everything below is inlined into run_tile_program's loop, so the tile arrays are registers
// (a tile whose address escapes lives on the stack, and each instruction reloads it).
#if defined(__GNUC__) || defined(__clang__)
#define FLUXION_TILE_INLINE inline __attribute__((always_inline))
#else
#define FLUXION_TILE_INLINE inline
#endif

template <TileInstr::Source kSource, class T, class P>
FLUXION_TILE_INLINE void load_operand(int32_t index, const void* literal, char* const* bases, const T* slots,
                                      int64_t start, const P* acc, P* out) {
  constexpr int64_t S = ei::packet_traits<T>::size;
  if constexpr (kSource == TileInstr::external) {
    const T* p = reinterpret_cast<const T*>(bases[index]) + start;
    for (int k = 0; k < kTilePackets; ++k) out[k] = ei::ploadu<P>(p + k * S);
  } else if constexpr (kSource == TileInstr::scratch) {
    const T* p = slots + index * tile_elements<T>();
    for (int k = 0; k < kTilePackets; ++k) out[k] = ei::pload<P>(p + k * S);
  } else if constexpr (kSource == TileInstr::scalar) {
    const T v = literal ? *static_cast<const T*>(literal) : *reinterpret_cast<const T*>(bases[index]);
    for (int k = 0; k < kTilePackets; ++k) out[k] = ei::pset1<P>(v);
  } else {
    for (int k = 0; k < kTilePackets; ++k) out[k] = acc[k];
  }
}

/// -(acc * b): (-acc) b + (-0), rounded once, is the rounded product with its sign flipped, for
/// every value (a zero product gets the sign the negation gives it, -0 + -0 = -0, +0 + -0 = +0),
/// so the contraction keeps the mul-then-neg bits. Where pmadd is a multiply and an add (no
/// FMA), it is that mul, a negation and an exact add of -0.
template <class P> FLUXION_TILE_INLINE P negated_product(const P& acc, const P& b) {
  using T = typename ei::unpacket_traits<P>::type;
  return ei::pmadd(unary_ops::neg_packet(acc), b, ei::pset1<P>(T(-0.0)));
}

/// The unary primitives' own packet forms (backends/cpu/unary_packets.hpp): the same bits as
/// their eager kernels.
template <TileOp kOp, class T, class P> FLUXION_TILE_INLINE P unary_packet(const P& x) {
  namespace ops = unary_ops;
  if constexpr (kOp == TileOp::neg) return ops::Neg::packet(x);
  else if constexpr (kOp == TileOp::exp) return ops::Exp::packet(x);
  else if constexpr (kOp == TileOp::log) return ops::Log::packet(x);
  else if constexpr (kOp == TileOp::sqrt) return ops::Sqrt::packet(x);
  else return ops::Tanh::packet(x);
}

/// The binary primitives' own packet forms (backends/cpu/binary_ops.hpp).
template <TileOp kOp, bool kReversed, class P> FLUXION_TILE_INLINE P binary_packet(const P& acc, const P& b) {
  namespace ops = binary_ops;
  const P& x = kReversed ? b : acc;
  const P& y = kReversed ? acc : b;
  if constexpr (kOp == TileOp::add) return ops::Add::packet(x, y);
  else if constexpr (kOp == TileOp::sub) return ops::Sub::packet(x, y);
  else if constexpr (kOp == TileOp::mul) return ops::Mul::packet(x, y);
  else return ops::Div::packet(x, y);
}
/// Adds the T partial sums of `n` sum instructions into their double sums and clears them.
template <class T> inline void flush_sums(T* partial, double* sums, int n) {
  constexpr int64_t S = ei::packet_traits<T>::size;
  for (int64_t l = 0; l < n * S; ++l) {
    sums[l] += static_cast<double>(partial[l]);
    partial[l] = T(-0.0);
  }
}
}  // namespace tile_detail

/// True when the tile programs implement `op` as a unary (1) or binary (2) operation.
inline int tile_op_arity(TileOp op) {
  switch (op) {
    case TileOp::neg:
    case TileOp::exp:
    case TileOp::log:
    case TileOp::sqrt:
    case TileOp::tanh: return 1;
    case TileOp::add:
    case TileOp::sub:
    case TileOp::mul:
    case TileOp::div: return 2;
    default: return 0;
  }
}

/// One instruction as text, for plan dumps: `load x0` (external 0), `mul s1` (scratch tile 1),
/// `sub# c` (reversed, a broadcast value), `mul acc`, `store s0`, `sum 0`, `nmul x0` (-(acc x0)).
inline std::string describe(const TileInstr& in) {
  static const char* const kinds[] = {"load", "", "", "store", "sum", "nmul"};
  static const char* const ops[] = {"", "neg", "exp", "log", "sqrt", "tanh", "add", "sub", "mul", "div"};
  std::string text =
      in.kind == TileInstr::unary || in.kind == TileInstr::binary ? ops[static_cast<int>(in.op)] : kinds[in.kind];
  if (in.kind == TileInstr::unary) return text;
  if (in.kind == TileInstr::sum) return text + " " + std::to_string(in.index);
  auto operand = [](TileInstr::Source source, int32_t index) -> std::string {
    switch (source) {
      case TileInstr::external: return "x" + std::to_string(index);
      case TileInstr::scratch: return "s" + std::to_string(index);
      case TileInstr::scalar: return "c";
      default: return "acc";
    }
  };
  return text + (in.reversed ? "# " : " ") + operand(in.source, in.index);
}

/// Contracts each multiply whose product the next instruction negates (and nothing else reads:
/// the program would store it in between) into one negated product (negated_product: the same
/// bits, one instruction instead of two; gradients of exp(-x²) have one, -(x x)). A multiply followed by
/// an add or a subtract is NOT contracted into a multiply-add: eager evaluation rounds the product
/// before the addition, and the fused program must give eager's bits (an overflowing product
/// plus -inf is NaN eagerly, -inf through an FMA; with finite values the last bit differs). The
/// library is compiled with -ffp-contract=off for the same reason (CMakeLists.txt).
inline void contract_negated_products(std::vector<TileInstr>& program) {
  std::vector<TileInstr> out;
  out.reserve(program.size());
  for (size_t i = 0; i < program.size(); ++i) {
    const TileInstr& mul = program[i];
    const bool product = mul.kind == TileInstr::binary && mul.op == TileOp::mul;
    const bool negated =
        i + 1 < program.size() && program[i + 1].kind == TileInstr::unary && program[i + 1].op == TileOp::neg;
    out.push_back(mul);
    if (!product || !negated) continue;
    out.back().kind = TileInstr::nmul;
    out.back().op = TileOp::none;
    out.back().reversed = false;  // acc * operand = operand * acc
    out.back().finish();
    ++i;
  }
  program = std::move(out);
}

// Threaded dispatch where the compiler has labels as values (GCC, Clang): every handler ends in
// its own indirect jump to the next instruction's handler, which the branch predictor learns per
// handler, and there is no bounds check or jump back to a shared switch. Elsewhere, a switch.
#if (defined(__GNUC__) || defined(__clang__)) && !defined(FLUXION_TILE_SWITCH_DISPATCH)
#define FLUXION_TILE_THREADED 1
#else
#define FLUXION_TILE_THREADED 0
#endif

/// Runs `program` over the whole tiles of elements [e0, e1) (e1 - e0 a multiple of
/// tile_elements<T>()); `slots` holds the scratch tiles (64-byte aligned). Sum instruction k adds
/// its accumulator tile's elements into the S = packet-size double partial sums at sums + k * S
/// (the tile's four packets added in T, then kSumFlushTiles tiles in T).
template <class T> void run_tile_program(const TileInstr* program, int count, char* const* bases, T* slots,
                                         double* sums, int64_t e0, int64_t e1) {
  namespace ei = Eigen::internal;
  namespace td = tile_detail;
  using P = typename ei::packet_traits<T>::type;
  using I = TileInstr;
  constexpr int64_t S = ei::packet_traits<T>::size;
  constexpr int64_t kTile = tile_elements<T>();
  if (count <= 0) return;
  int n_sums = 0;
  for (int i = 0; i < count; ++i) n_sums += program[i].kind == TileInstr::sum;
  alignas(64) T partial[kMaxTileSums * S];
  std::fill(partial, partial + n_sums * S, T(-0.0));  // IEEE addition's identity, as eager sums
  // Each handler: a label (threaded) or case (switch) for its code, its body, then FLUXION_TILE_NEXT.
#if FLUXION_TILE_THREADED
#define FLUXION_TILE_HANDLER(name, code) \
  name:
#define FLUXION_TILE_NEXT \
  ++in;                   \
  goto* * ++target;
  // Indexed by tile_code (the static_asserts below check the order).
  static const void* const handlers[] = {
      &&load_external,
      &&load_scratch,
      &&load_scalar,
      &&unary_neg,
      &&unary_exp,
      &&unary_log,
      &&unary_sqrt,
      &&unary_tanh,
#define FLUXION_TILE_BINARY_LABELS(op)                                                          \
  &&binary_##op##_external_false, &&binary_##op##_external_true, &&binary_##op##_scratch_false, \
      &&binary_##op##_scratch_true, &&binary_##op##_scalar_false, &&binary_##op##_scalar_true,  \
      &&binary_##op##_self_false,
      FLUXION_TILE_BINARY_LABELS(add) FLUXION_TILE_BINARY_LABELS(sub) FLUXION_TILE_BINARY_LABELS(mul)
              FLUXION_TILE_BINARY_LABELS(div)
#undef FLUXION_TILE_BINARY_LABELS
          && store_scratch,
      &&store_external,
      &&sum_external,
      &&nmul_external,
      &&nmul_scratch,
      &&nmul_scalar,
      &&nmul_self,
  };
  static_assert(sizeof(handlers) / sizeof(handlers[0]) == kTileCodes, "one handler per tile_code");
  // Each instruction's handler address, and after the last the end of the tile: a dispatch is
  // then two increments and an indirect jump (looking up the code in the table and comparing
  // against the program's end took four more scalar instructions per handler, on the ports the
  // vector instructions use).
  thread_local std::vector<const void*> long_targets;  // programs longer than the inline array
  const void* inline_targets[64];
  const void** targets = inline_targets;
  if (count + 1 > 64) {
    if (long_targets.size() < static_cast<size_t>(count) + 1) long_targets.resize(static_cast<size_t>(count) + 1);
    targets = long_targets.data();
  }
  for (int i = 0; i < count; ++i) targets[i] = handlers[program[i].code];
  targets[count] = &&tile_done;
#else
#define FLUXION_TILE_HANDLER(name, code) case code:
#define FLUXION_TILE_NEXT break;
#endif
  int64_t flush = std::min(e1, e0 + kSumFlushTiles * kTile);
  for (int64_t start = e0; start < e1; start += kTile) {
    if (start == flush) {
      td::flush_sums(partial, sums, n_sums);
      flush = std::min(e1, start + kSumFlushTiles * kTile);
    }
    // The operand tiles b and c are declared in the handlers that use them: declared here, their
    // lifetime spanned the whole program and GCC stored them to the stack in every handler.
    P acc[kTilePackets];
    const TileInstr* in = program;
#if FLUXION_TILE_THREADED
    const void* const* target = targets;
    goto** target;
    {
#else
    for (const TileInstr* const program_end = program + count; in != program_end; ++in) {
      switch (in->code) {
#endif
#define FLUXION_TILE_LOAD(src, code)                                                 \
  FLUXION_TILE_HANDLER(load_##src, code)                                             \
  static_assert(tile_code(I::load, TileOp::none, I::src, false) == (code), "order"); \
  td::load_operand<I::src>(in->index, in->literal, bases, slots, start, acc, acc);   \
  FLUXION_TILE_NEXT
      FLUXION_TILE_LOAD(external, 0)
      FLUXION_TILE_LOAD(scratch, 1)
      FLUXION_TILE_LOAD(scalar, 2)
#undef FLUXION_TILE_LOAD
#define FLUXION_TILE_UNARY(op, code)                                                       \
  FLUXION_TILE_HANDLER(unary_##op, code)                                                   \
  static_assert(tile_code(I::unary, TileOp::op, I::external, false) == (code), "order");   \
  for (int k = 0; k < kTilePackets; ++k) acc[k] = td::unary_packet<TileOp::op, T>(acc[k]); \
  FLUXION_TILE_NEXT
      FLUXION_TILE_UNARY(neg, 3)
      FLUXION_TILE_UNARY(exp, 4)
      FLUXION_TILE_UNARY(log, 5)
      FLUXION_TILE_UNARY(sqrt, 6)
      FLUXION_TILE_UNARY(tanh, 7)
#undef FLUXION_TILE_UNARY
#define FLUXION_TILE_BINARY_CASE(op, src, rev, code)                                                  \
  FLUXION_TILE_HANDLER(binary_##op##_##src##_##rev, code)                                             \
  static_assert(tile_code(I::binary, TileOp::op, I::src, rev) == (code), "order");                    \
  {                                                                                                   \
    P b[kTilePackets];                                                                                \
    td::load_operand<I::src>(in->index, in->literal, bases, slots, start, acc, b);                    \
    for (int k = 0; k < kTilePackets; ++k) acc[k] = td::binary_packet<TileOp::op, rev>(acc[k], b[k]); \
  }                                                                                                   \
  FLUXION_TILE_NEXT
#define FLUXION_TILE_BINARY(op, first)                    \
  FLUXION_TILE_BINARY_CASE(op, external, false, first)    \
  FLUXION_TILE_BINARY_CASE(op, external, true, first + 1) \
  FLUXION_TILE_BINARY_CASE(op, scratch, false, first + 2) \
  FLUXION_TILE_BINARY_CASE(op, scratch, true, first + 3)  \
  FLUXION_TILE_BINARY_CASE(op, scalar, false, first + 4)  \
  FLUXION_TILE_BINARY_CASE(op, scalar, true, first + 5)   \
  FLUXION_TILE_BINARY_CASE(op, self, false, first + 6)
      FLUXION_TILE_BINARY(add, 8)
      FLUXION_TILE_BINARY(sub, 15)
      FLUXION_TILE_BINARY(mul, 22)
      FLUXION_TILE_BINARY(div, 29)
#undef FLUXION_TILE_BINARY
#undef FLUXION_TILE_BINARY_CASE
      FLUXION_TILE_HANDLER(store_scratch, 36) {
        static_assert(tile_code(I::store, TileOp::none, I::scratch, false) == 36, "order");
        T* p = slots + in->index * kTile;
        for (int k = 0; k < kTilePackets; ++k) ei::pstore(p + k * S, acc[k]);
      }
      FLUXION_TILE_NEXT
      FLUXION_TILE_HANDLER(store_external, 37) {
        static_assert(tile_code(I::store, TileOp::none, I::external, false) == 37, "order");
        T* p = reinterpret_cast<T*>(bases[in->index]) + start;
        for (int k = 0; k < kTilePackets; ++k) ei::pstoreu(p + k * S, acc[k]);
      }
      FLUXION_TILE_NEXT
      FLUXION_TILE_HANDLER(sum_external, 38) {
        static_assert(tile_code(I::sum, TileOp::none, I::external, false) == 38, "order");
        // The tile's packets added pairwise in T, then into this instruction's partial packet
        // in T (converted and added into the double sums every kSumFlushTiles tiles).
        static_assert(kTilePackets == 4, "the pairwise tile sum below adds four packets");
        const P tile_sum = ei::padd(ei::padd(acc[0], acc[1]), ei::padd(acc[2], acc[3]));
        T* p = partial + in->index * S;
        ei::pstore(p, ei::padd(ei::pload<P>(p), tile_sum));
      }
      FLUXION_TILE_NEXT
#define FLUXION_TILE_NMUL(src, code)                                                   \
  FLUXION_TILE_HANDLER(nmul_##src, code)                                               \
  static_assert(tile_code(I::nmul, TileOp::none, I::src, false) == (code), "order");   \
  {                                                                                    \
    P b[kTilePackets];                                                                 \
    td::load_operand<I::src>(in->index, in->literal, bases, slots, start, acc, b);     \
    for (int k = 0; k < kTilePackets; ++k) acc[k] = td::negated_product(acc[k], b[k]); \
  }                                                                                    \
  FLUXION_TILE_NEXT
      FLUXION_TILE_NMUL(external, 39)
      FLUXION_TILE_NMUL(scratch, 40)
      FLUXION_TILE_NMUL(scalar, 41)
      FLUXION_TILE_NMUL(self, 42)
#undef FLUXION_TILE_NMUL
#if FLUXION_TILE_THREADED
    }
  tile_done:;
#else
        default: break;
      }
    }
#endif
  }
#undef FLUXION_TILE_HANDLER
#undef FLUXION_TILE_NEXT
  td::flush_sums(partial, sums, n_sums);
}

}  // namespace fluxion::cpu
