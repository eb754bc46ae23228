/// The whole tiles of a fused range through its register program, in the instruction-set variant
/// that the CPU runs best (backends/cpu/isa.hpp). Each variant's translation unit instantiates
/// run_whole_tiles with its own Variant tag; run_tile_range dispatches to them.
#pragma once
#include <Eigen/Core>
#include <cstdint>

#include "backends/cpu/isa.hpp"
#include "backends/cpu/tile_program.hpp"

namespace fluxion::cpu {

/// Elements of the widest f32 tile that a variant of this library runs: the register-program
/// compiler sizes the scratch tiles for it (an AVX-512 tile is four times a baseline one).
#if defined(FLUXION_ISA_DISPATCH)
inline constexpr int64_t kWidestTileElements = kTilePackets * 16;  // four AVX-512 packets of f32
#else
inline constexpr int64_t kWidestTileElements = tile_elements<float>();
#endif

/// Where the sums of run_whole_tiles start (IEEE addition's identity, as the eager sums).
inline constexpr double kTileSumStart = -0.0;

/// Runs `program` over the whole tiles of elements [e0, e1) (tiles of tile_elements<T>(), which
/// depends on the variant's packet width) and returns where they end (e0 when there is none).
/// totals[k] is sum instruction k's total over them, its lanes added in order from kTileSumStart.
/// `slots`: the scratch tiles, 64-byte aligned.
template <class T, class Variant> int64_t run_whole_tiles(const TileInstr* program, int count, char* const* bases,
                                                          void* slots, double* totals, int n_sums, int64_t e0,
                                                          int64_t e1) {
  constexpr int64_t tile = tile_elements<T>(), lanes = Eigen::internal::packet_traits<T>::size;
  const int64_t whole = e0 + (e1 - e0) / tile * tile;
  if (whole == e0) return e0;
  alignas(64) double sums[kMaxTileSums * lanes];
  // Plain loops, not std::fill: a standard-library instance emitted here would be a symbol shared
  // with the baseline code (isa.hpp).
  for (int64_t l = 0; l < n_sums * lanes; ++l) sums[l] = kTileSumStart;
  run_tile_program<T, Variant>(program, count, bases, static_cast<T*>(slots), sums, e0, whole);
  for (int k = 0; k < n_sums; ++k) {
    double total = kTileSumStart;
    for (int64_t l = 0; l < lanes; ++l) total += sums[k * lanes + l];
    totals[k] = total;
  }
  return whole;
}

/// A variant's entry (one per dtype): run_whole_tiles<T, ThatVariant>.
using WholeTilesFn = int64_t (*)(const TileInstr* program, int count, char* const* bases, void* slots, double* totals,
                                 int n_sums, int64_t e0, int64_t e1);

/// run_whole_tiles for `dtype` (f32 or f64) in active_isa()'s variant, or a narrower one: programs
/// that use multiply-adds (`uses_madd`: FusedLowering::program_uses_madd) run the AVX2 variant where
/// AVX-512 is active, so that their values keep the eager kernels' bits.
int64_t run_tile_range(DType dtype, bool uses_madd, const TileInstr* program, int count, char* const* bases,
                       void* slots, double* totals, int n_sums, int64_t e0, int64_t e1);

}  // namespace fluxion::cpu
