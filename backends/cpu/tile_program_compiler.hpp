/// The CPU lowering of a fused step: its members' kernels from the lowering table, its tiled
/// product's kernel, its register program (backends/cpu/tile_program.hpp) when every member has a
/// tile form, and which row-sum kernels its reductions may use.
#pragma once
#include <cstdint>
#include <vector>

#include "backends/cpu/lowering.hpp"
#include "backends/cpu/tile_program.hpp"
#include "runtime/plan.hpp"

namespace fluxion::cpu {

/// What the CPU runner attaches to every fused step (runtime::Step::lowering).
struct FusedLowering : runtime::StepLowering {
  // By member (runtime::Step::members): its primitive's entry in the CPU lowering table. Broadcast
  // and reduce members have none (the runner computes them itself).
  struct Member {
    BlockKernel block = nullptr;
    RowBlockKernel row_block = nullptr;
    TileOp tile_op = TileOp::none;
  };
  std::vector<Member> members;
  // The tiled product (runtime::Step::tiled): its tile kernel and plan.
  TileKernel tile = nullptr;
  TilePlan tile_plan;
  // The group as a register program, run over whole tiles, the remainder by the block path; sum
  // instruction k adds into accumulator tile_sums[k]. Empty: the block path runs it all.
  std::vector<TileInstr> program;
  DType program_dtype = f32;
  std::vector<int64_t> tile_sums;
};

/// Fills `lowering`'s register program for fused step `step`, or leaves it empty when some member
/// has no tile form (a broadcast, a row-read operand, a reduction other than a full sum, another
/// dtype, a primitive without a TileOp). `lowering.members` is filled. Members are reordered so that a value's reader follows it
/// where it can; values stay in the accumulator along chains, and a value is stored when it
/// escapes the group or a member after the next one reads it (to a scratch tile, reused after its
/// last reader).
void compile_tile_program(const runtime::Step& step, FusedLowering& lowering);

}  // namespace fluxion::cpu
