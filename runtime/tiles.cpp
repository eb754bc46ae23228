// plan_tiles and the tile sizing it uses: tile shapes fit L2 beside the operands' panels, split
// evenly over the threads, and keep column blocks aligned for the panel product.
#include "runtime/tiles.hpp"

#include <algorithm>

#include "runtime/backend.hpp"
#include "runtime/switches.hpp"

namespace fluxion::runtime {

namespace tiles_detail {

/// Products whose output is smaller than this are computed whole: it stays in L2 (2 MiB per core
/// here) for the group reading it anyway; tiles gain from about 2 MB, at 1.3 MB they tie
/// (measured: bench/RESULTS.md).
constexpr int64_t kTileMinBytes = int64_t(1) << 20;
/// Elements of one tile (1 MiB of f64, beside the operands' packed panels in L2) and its widest
/// rows. On a 1000 x 6400 x 64 product read by a sum of squares, tiles of 250 x 512, 128 x 1024 or
/// 1000 x 128 took the same time, about 25 % less than the whole product and then the sums, and
/// tiles as wide as the product gained less (measured: bench/RESULTS.md).
constexpr int64_t kTileElements = int64_t(1) << 17;
constexpr int64_t kTileMaxCols = 1024;

/// `extent` split evenly into the fewest parts of at most `most`: the part size.
int64_t even_part(int64_t extent, int64_t most) {
  const int64_t parts = (extent + most - 1) / most;
  return (extent + parts - 1) / parts;
}

/// Tile rows for an m-row product cut in `col_tiles` column tiles, from `rows` (even_part's),
/// so that few tiles split evenly over `threads`: the row tiles are raised until the tile count
/// is a multiple of the thread count (up to 8 tiles a thread, past which the last uneven share
/// matters little): 3 tiles on 2 threads run as 2 + 1, as long as on one thread.
int64_t balanced_tile_rows(int64_t m, int64_t rows, int64_t col_tiles, int threads) {
  int64_t row_tiles = (m + rows - 1) / rows;
  if (threads <= 1 || row_tiles * col_tiles >= 8 * int64_t(threads)) return rows;
  while ((row_tiles * col_tiles) % threads != 0 && row_tiles < m) ++row_tiles;
  return (m + row_tiles - 1) / row_tiles;
}

/// True when the members of fused step `f` read its external `x` only as whole blocks (not as a
/// scalar, by rows, or through a broadcast's index mapping): what a tile can stand in for.
bool reads_blocks_only(const Step& f, int32_t x) {
  for (const FusedMember& m : f.members)
    for (int i = 0; i < m.num_inputs; ++i) {
      const FusedOperand& op = m.inputs[i];
      if (op.index != x || (op.source != FusedOperand::external && op.source != FusedOperand::rows)) continue;
      if (op.source == FusedOperand::rows || op.scalar || m.broadcast) return false;
    }
  return true;
}

}  // namespace tiles_detail

void plan_tiles(const Jaxpr& j, Plan& plan, StepUses& uses, const Lowering& lowering) {
  using namespace tiles_detail;
  if (!enabled(Switch::tiles)) return;
  std::vector<std::vector<int32_t>>& defs = uses.defs;
  std::vector<std::vector<int32_t>>& reads = uses.reads;
  std::vector<int32_t> reader(j.avals.size(), -1), readers(j.avals.size(), 0);
  for (size_t st = 0; st < reads.size(); ++st)
    for (int32_t v : reads[st])
      if (reader[v] != static_cast<int32_t>(st)) ++readers[v], reader[v] = static_cast<int32_t>(st);
  for (size_t sd = 0; sd < plan.steps.size(); ++sd) {
    Step& d = plan.steps[sd];
    if (d.type != Step::kernel || d.eqn->outputs.size() != 1) continue;
    const Equation& e = *d.eqn;
    const int32_t t = e.outputs[0];
    // A half-precision kernel step (widen_half off) computes in f32 through its own buffers: never tiled.
    if (is_half(j.avals[t].dtype) ||
        std::any_of(e.inputs.begin(), e.inputs.end(), [&](const Atom& a) { return is_half(j.aval_of(a).dtype); }))
      continue;
    if (plan.kind[t] != Kind::intermediate || readers[t] != 1 || reader[t] >= static_cast<int32_t>(plan.steps.size()))
      continue;
    Step& f = plan.steps[static_cast<size_t>(reader[t])];
    const int32_t itemsize = itemsize_of(j.avals[t].dtype);
    if (f.type != Step::fused || f.tiled || f.n != j.avals[t].shape.num_elements() || f.n * itemsize < kTileMinBytes)
      continue;
    const auto x = static_cast<int32_t>(std::find(f.externals.begin(), f.externals.end(), t) - f.externals.begin());
    if (!reads_blocks_only(f, x)) continue;
    std::vector<AbstractValue> in;
    for (const Atom& a : e.inputs) in.push_back(j.aval_of(a));
    const TileView tp = lowering.tile_view(*e.primitive, in, *e.params);
    if (tp.m <= 0 || tp.m * tp.n != f.n) continue;
    f.tiled = &e;
    f.tile_view = tp;
    f.tiled_external = x;
    f.tiled_itemsize = itemsize;
    f.tile_cols = even_part(tp.n, kTileMaxCols);
    f.tile_rows = balanced_tile_rows(tp.m, even_part(tp.m, std::max<int64_t>(1, kTileElements / f.tile_cols)),
                                     (tp.n + f.tile_cols - 1) / f.tile_cols, max_threads());
    plan.max_tile_bytes = std::max(plan.max_tile_bytes, f.tile_rows * f.tile_cols * itemsize);
    plan.max_inputs = std::max<int32_t>(plan.max_inputs, static_cast<int32_t>(e.inputs.size()));
    plan.kind[t] = Kind::tiled;
    d.type = Step::nothing;
    uses.in_place[sd] = false;
    defs[sd].erase(std::remove(defs[sd].begin(), defs[sd].end(), t), defs[sd].end());
    std::vector<int32_t>& r = reads[static_cast<size_t>(reader[t])];
    r.erase(std::remove(r.begin(), r.end(), t), r.end());
    for (const Atom& a : e.inputs)
      if (!a.is_literal()) r.push_back(a.var);
  }
}

}  // namespace fluxion::runtime
