/// PlanCache: the compiled plans of one Jaxpr, one per device, each optimized and planned once.
///
/// Every compiled Jaxpr is run through one of these: fx::jit's signatures (JitCallParams), the
/// bodies of cond, while, scan and checkpoint, and custom-rule calls (SubJaxpr). It is the one
/// place where a Jaxpr becomes an Executable:
///   traced Jaxpr    --passes::optimize_for_execution-->  --Executable(jaxpr, device)-->  plan
///   optimized Jaxpr --passes::finish_for_execution----->  (the pipeline runs again only when
///                                                          calls with rules of their own remain)
///
/// Direction of the dependencies: runtime/ depends on primitives/ (traits, shape rules, kernels)
/// and on the passes; a primitive that runs a sub-Jaxpr depends on this header only, in which
/// Executable stays opaque (declared, never defined). So a primitive knows that a plan exists for
/// its sub-Jaxpr on a device, never how it is planned or which backend runs it; the public headers
/// only declare PlanCache and hold it by shared_ptr.
#pragma once
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "fluxion/jaxpr.hpp"

namespace fluxion {

class Executable;

namespace runtime {

/// How far the passes have taken a Jaxpr handed to a PlanCache.
enum class JaxprStage {
  traced,     // as staged: the whole pipeline runs when it is planned
  optimized,  // passes::optimize ran (fx::jit, once per signature): only remaining calls are inlined
};

/// The per-device plans of one Jaxpr. Thread-safe: the first request for a device compiles under
/// the cache's mutex (so each device's plan is compiled exactly once); later ones share it.
class PlanCache {
 public:
  PlanCache(std::shared_ptr<const Jaxpr> jaxpr, JaxprStage stage);
  PlanCache(const PlanCache&) = delete;
  PlanCache& operator=(const PlanCache&) = delete;

  const Jaxpr& jaxpr() const { return *jaxpr_; }
  /// The plan for `device`, compiled on first use.
  std::shared_ptr<const Executable> executable(Device device) const;
  /// Runs the plan of the arguments' device (CPU when there are none); the arguments are checked
  /// against the traced avals.
  std::vector<Tensor> run(const std::vector<Tensor>& args) const;

 private:
  std::shared_ptr<const Jaxpr> jaxpr_;
  JaxprStage stage_;
  mutable std::mutex mutex_;
  mutable std::vector<std::pair<Device, std::shared_ptr<const Executable>>> plans_;
};

/// Optimizes `jaxpr` as its stage needs and plans it for `device` (what a PlanCache miss runs).
std::shared_ptr<const Executable> compile(const Jaxpr& jaxpr, JaxprStage stage, Device device);

/// Runs `plan` (taken once from a PlanCache, e.g. by a loop before its first step) on `args`,
/// checked against the traced avals; `outs` receives one tensor per output.
void run_plan(const Executable& plan, const std::vector<Tensor>& args, std::vector<Tensor>& outs);
/// run_plan() for arguments already known to match the traced avals (a loop's later steps).
void run_plan_unchecked(const Executable& plan, const std::vector<Tensor>& args, std::vector<Tensor>& outs);

}  // namespace runtime
}  // namespace fluxion
