/// Tile planning: a large product read by one fused group only is computed tile by tile inside
/// that group (Step::tiled), so that its output is never stored whole.
#pragma once
#include "runtime/plan.hpp"

namespace fluxion::runtime {

/// Moves each large tileable product (Lowering::tile_view) read by one fused group only into that
/// group: the product's step does nothing, its output gets no storage (Kind::tiled), and its
/// operands stay alive until the group runs (`uses` updated). Nothing with Switch::tiles off.
void plan_tiles(const Jaxpr& j, Plan& plan, StepUses& uses, const Lowering& lowering);

}  // namespace fluxion::runtime
