// The CUDA jit's lowering slot: planning fuses the elementwise equations a generated kernel can
// compute (fused_kernel.hpp, generates). Broadcasts, sums, rows and tiles are not generated yet, so
// those answers stay "no" and such equations run as kernel steps.
#include "backends/cuda/jit/fused_kernel.hpp"
#include "backends/cuda/jit/plan_runners.hpp"

namespace fluxion::cuda::jit {

namespace lowering_detail {

class FusedLowering final : public runtime::Lowering {
 public:
  bool fuses(const Primitive& p) const override { return generates(p); }
};

}  // namespace lowering_detail

const runtime::Lowering& fused_lowering() {
  static const lowering_detail::FusedLowering lowering;
  return lowering;
}

}  // namespace fluxion::cuda::jit
