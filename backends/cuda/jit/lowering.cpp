// The CUDA jit's lowering slot: planning fuses the elementwise equations a generated kernel can
// compute (fused_kernel.hpp, generates), broadcast_in_dim (read by index map) and the reduce_sums
// that end a fused step (a thread per output). Row reads (a CPU block-loop optimisation: the index
// map already reads each operand element in place) and tiles are not generated, so those answers
// stay "no". The `fusion` switch turns all of it off (the planner makes no fused steps).
#include "backends/cuda/jit/fused_kernel.hpp"
#include "backends/cuda/jit/plan_runners.hpp"

namespace fluxion::cuda::jit {

namespace lowering_detail {

class FusedLowering final : public runtime::Lowering {
 public:
  bool fuses(const Primitive& p) const override { return generates(p); }
  bool fuses_broadcasts_and_sums() const override { return true; }
};

}  // namespace lowering_detail

const runtime::Lowering& fused_lowering() {
  static const lowering_detail::FusedLowering lowering;
  return lowering;
}

}  // namespace fluxion::cuda::jit
