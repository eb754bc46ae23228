/// Fused tile programs: a fused elementwise group run as one loop over tiles of kTilePackets
/// vector packets, each member an instruction on an accumulator tile held in registers. Along a
/// chain (each member reading the one before) values never leave the registers; a value read
/// again later is stored to a scratch tile in L1. Against the block path (each member its own
/// pass over a 1024-element block, storing and reloading between members) this is the difference
/// between bench W1's fused group at 1.6x and about 1.1x the hand-fused Eigen loop.
///
/// The operations are the primitives' own (TileOp, set by the primitive); the values are those of
/// the block kernels' vector path (same Eigen packet functions, backends/cpu/special_functions.hpp).
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>

#include "backends/cpu/special_functions.hpp"
#include "fluxion/primitive.hpp"

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
template <class T>
constexpr int64_t tile_elements() {
  return kTilePackets * Eigen::internal::packet_traits<T>::size;
}

/// One instruction. The accumulator tile is `acc`; the operand (`source`) is an external array
/// (its base pointer bases[index], read at the tile's offset), a scratch tile (slot `index`), one
/// value broadcast over the tile (`scalar`: a literal, or bases[index] when `literal` is null), or
/// the accumulator itself. `code` (tile_code, set by finish()) is what the interpreter switches on:
/// one indirect jump per instruction.
struct TileInstr {
  enum Kind : uint8_t { load, unary, binary, store, sum } kind = load;
  enum Source : uint8_t { external, scratch, scalar, self } source = external;
  TileOp op = TileOp::none;
  bool reversed = false;  // binary: acc = op(operand, acc) instead of op(acc, operand)
  int32_t index = 0;      // external index, scratch slot, or sum: accumulator set
  const void* literal = nullptr;
  uint16_t code = 0;
  void finish();
};

/// The interpreter's case for an instruction's kind, operation, operand source and order: dense
/// (0..38), so the switch compiles to one jump table (sparse case values made it a tree of
/// compares and branches).
constexpr uint16_t tile_code(TileInstr::Kind kind, TileOp op, TileInstr::Source source, bool reversed) {
  const int o = static_cast<int>(op), src = static_cast<int>(source);
  switch (kind) {
    case TileInstr::load: return static_cast<uint16_t>(src);                                      // 0..2
    case TileInstr::unary: return static_cast<uint16_t>(3 + o - static_cast<int>(TileOp::neg));  // 3..7
    case TileInstr::binary:                                                                        // 8..35
      return static_cast<uint16_t>(8 + (o - static_cast<int>(TileOp::add)) * 7 + src * 2 + (reversed ? 1 : 0));
    case TileInstr::store: return source == TileInstr::scratch ? 36 : 37;
    default: return 38;
  }
}
inline void TileInstr::finish() {
  if (source == self) reversed = false;  // op(acc, acc) either way
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
FLUXION_TILE_INLINE void load_operand(const TileInstr& in, char* const* bases, const T* slots, int64_t start,
                                      const P* acc, P* out) {
  constexpr int64_t S = ei::packet_traits<T>::size;
  if constexpr (kSource == TileInstr::external) {
    const T* p = reinterpret_cast<const T*>(bases[in.index]) + start;
    for (int k = 0; k < kTilePackets; ++k) out[k] = ei::ploadu<P>(p + k * S);
  } else if constexpr (kSource == TileInstr::scratch) {
    const T* p = slots + in.index * tile_elements<T>();
    for (int k = 0; k < kTilePackets; ++k) out[k] = ei::pload<P>(p + k * S);
  } else if constexpr (kSource == TileInstr::scalar) {
    const T v = in.literal ? *static_cast<const T*>(in.literal) : *reinterpret_cast<const T*>(bases[in.index]);
    for (int k = 0; k < kTilePackets; ++k) out[k] = ei::pset1<P>(v);
  } else {
    for (int k = 0; k < kTilePackets; ++k) out[k] = acc[k];
  }
}

template <TileOp kOp, class T, class P>
FLUXION_TILE_INLINE P unary_packet(const P& x) {
  if constexpr (kOp == TileOp::neg) return ei::pnegate(x);
  else if constexpr (kOp == TileOp::exp) return ExpFlushToZero<T>().packetOp(x);
  else if constexpr (kOp == TileOp::log) return ei::plog(x);
  else if constexpr (kOp == TileOp::sqrt) return ei::psqrt(x);
  else if constexpr (std::is_same_v<T, double>) return TanhF64<T>().packetOp(x);
  else return ei::ptanh(x);
}

template <TileOp kOp, bool kReversed, class P>
FLUXION_TILE_INLINE P binary_packet(const P& acc, const P& b) {
  const P& x = kReversed ? b : acc;
  const P& y = kReversed ? acc : b;
  if constexpr (kOp == TileOp::add) return ei::padd(x, y);
  else if constexpr (kOp == TileOp::sub) return ei::psub(x, y);
  else if constexpr (kOp == TileOp::mul) return ei::pmul(x, y);
  else return ei::pdiv(x, y);
}
/// Adds the T partial sums of `n` sum instructions into their double sums and clears them.
template <class T>
inline void flush_sums(T* partial, double* sums, int n) {
  constexpr int64_t S = ei::packet_traits<T>::size;
  for (int64_t l = 0; l < n * S; ++l) {
    sums[l] += static_cast<double>(partial[l]);
    partial[l] = T(0);
  }
}
}  // namespace tile_detail

/// True when the tile programs implement `op` as a unary (1) or binary (2) operation.
inline int tile_op_arity(TileOp op) {
  switch (op) {
    case TileOp::neg: case TileOp::exp: case TileOp::log: case TileOp::sqrt: case TileOp::tanh: return 1;
    case TileOp::add: case TileOp::sub: case TileOp::mul: case TileOp::div: return 2;
    default: return 0;
  }
}

/// Runs `program` over the whole tiles of elements [e0, e1) (e1 - e0 a multiple of
/// tile_elements<T>()); `slots` holds the scratch tiles (64-byte aligned). Sum instruction k adds
/// its accumulator tile's elements into the S = packet-size double partial sums at sums + k * S
/// (the tile's four packets added in T, then kSumFlushTiles tiles in T).
template <class T>
void run_tile_program(const TileInstr* program, int count, char* const* bases, T* slots, double* sums, int64_t e0,
                      int64_t e1) {
  namespace ei = Eigen::internal;
  namespace td = tile_detail;
  using P = typename ei::packet_traits<T>::type;
  using I = TileInstr;
  constexpr int64_t S = ei::packet_traits<T>::size;
  constexpr int64_t kTile = tile_elements<T>();
  int n_sums = 0;
  for (int i = 0; i < count; ++i) n_sums += program[i].kind == TileInstr::sum;
  alignas(64) T partial[kMaxTileSums * S];
  std::fill(partial, partial + n_sums * S, T(0));
  int64_t flush = std::min(e1, e0 + kSumFlushTiles * kTile);
  for (int64_t start = e0; start < e1; start += kTile) {
    if (start == flush) {
      td::flush_sums(partial, sums, n_sums);
      flush = std::min(e1, start + kSumFlushTiles * kTile);
    }
    P acc[kTilePackets], b[kTilePackets];
    for (int i = 0; i < count; ++i) {
      const TileInstr& in = program[i];
      switch (in.code) {
#define FLUXION_TILE_LOAD(src) \
  case tile_code(I::load, TileOp::none, I::src, false): td::load_operand<I::src>(in, bases, slots, start, acc, acc); break;
        FLUXION_TILE_LOAD(external)
        FLUXION_TILE_LOAD(scratch)
        FLUXION_TILE_LOAD(scalar)
#undef FLUXION_TILE_LOAD
#define FLUXION_TILE_UNARY(op)                                                                           \
  case tile_code(I::unary, TileOp::op, I::external, false):                                               \
    for (int k = 0; k < kTilePackets; ++k) acc[k] = td::unary_packet<TileOp::op, T>(acc[k]);           \
    break;
        FLUXION_TILE_UNARY(neg)
        FLUXION_TILE_UNARY(exp)
        FLUXION_TILE_UNARY(log)
        FLUXION_TILE_UNARY(sqrt)
        FLUXION_TILE_UNARY(tanh)
#undef FLUXION_TILE_UNARY
#define FLUXION_TILE_BINARY_CASE(op, src, rev)                                                           \
  case tile_code(I::binary, TileOp::op, I::src, rev):                                                     \
    td::load_operand<I::src>(in, bases, slots, start, acc, b);                                            \
    for (int k = 0; k < kTilePackets; ++k) acc[k] = td::binary_packet<TileOp::op, rev>(acc[k], b[k]);   \
    break;
#define FLUXION_TILE_BINARY(op)                                                                          \
  FLUXION_TILE_BINARY_CASE(op, external, false) FLUXION_TILE_BINARY_CASE(op, external, true)             \
  FLUXION_TILE_BINARY_CASE(op, scratch, false) FLUXION_TILE_BINARY_CASE(op, scratch, true)               \
  FLUXION_TILE_BINARY_CASE(op, scalar, false) FLUXION_TILE_BINARY_CASE(op, scalar, true)                 \
  FLUXION_TILE_BINARY_CASE(op, self, false)
        FLUXION_TILE_BINARY(add)
        FLUXION_TILE_BINARY(sub)
        FLUXION_TILE_BINARY(mul)
        FLUXION_TILE_BINARY(div)
#undef FLUXION_TILE_BINARY
#undef FLUXION_TILE_BINARY_CASE
        case tile_code(I::store, TileOp::none, I::scratch, false): {
          T* p = slots + in.index * kTile;
          for (int k = 0; k < kTilePackets; ++k) ei::pstore(p + k * S, acc[k]);
          break;
        }
        case tile_code(I::store, TileOp::none, I::external, false): {
          T* p = reinterpret_cast<T*>(bases[in.index]) + start;
          for (int k = 0; k < kTilePackets; ++k) ei::pstoreu(p + k * S, acc[k]);
          break;
        }
        case tile_code(I::sum, TileOp::none, I::external, false): {
          // The tile's packets added pairwise in T, then into this instruction's partial packet
          // in T (converted and added into the double sums every kSumFlushTiles tiles).
          static_assert(kTilePackets == 4, "the pairwise tile sum below adds four packets");
          const P tile_sum = ei::padd(ei::padd(acc[0], acc[1]), ei::padd(acc[2], acc[3]));
          T* p = partial + in.index * S;
          ei::pstore(p, ei::padd(ei::pload<P>(p), tile_sum));
          break;
        }
        default: break;
      }
    }
  }
  td::flush_sums(partial, sums, n_sums);
}

}  // namespace fluxion::cpu
