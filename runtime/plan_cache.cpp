// PlanCache: a Jaxpr's per-device plans, and the one compile path (passes, then the planner).
#include "runtime/plan_cache.hpp"

#include <cstdlib>
#include <iostream>

#include "transforms/executor.hpp"
#include "transforms/passes.hpp"

namespace fluxion::runtime {

PlanCache::PlanCache(std::shared_ptr<const Jaxpr> jaxpr, JaxprStage stage) : jaxpr_(std::move(jaxpr)), stage_(stage) {}

std::shared_ptr<const Executable> PlanCache::executable(Device device) const {
  // Held while compiling: concurrent first calls wait for the one plan instead of each making one.
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [d, plan] : plans_)
    if (d == device) return plan;
  std::shared_ptr<const Executable> plan = compile(*jaxpr_, stage_, device);
  plans_.emplace_back(device, plan);
  return plan;
}

std::vector<Tensor> PlanCache::run(const std::vector<Tensor>& args) const {
  std::vector<Tensor> outs;
  executable(args.empty() ? Device::cpu() : args[0].device())->run(args, outs);
  return outs;
}

std::shared_ptr<const Executable> compile(const Jaxpr& jaxpr, JaxprStage stage, Device device) {
  auto ready = std::make_shared<const Jaxpr>(stage == JaxprStage::optimized ? passes::finish_for_execution(jaxpr)
                                                                            : passes::optimize_for_execution(jaxpr));
  auto plan = std::make_shared<const Executable>(std::move(ready), device);
  // The passes' debug switch also shows the plan that will run.
  static const bool dump = std::getenv("FLUXION_DUMP_PASSES") != nullptr;
  if (dump) std::cerr << "-- plan --\n" << plan->describe();
  return plan;
}

void run_plan(const Executable& plan, const std::vector<Tensor>& args, std::vector<Tensor>& outs) {
  plan.run(args, outs);
}

void run_plan_unchecked(const Executable& plan, const std::vector<Tensor>& args, std::vector<Tensor>& outs) {
  plan.run_unchecked(args, outs);
}

}  // namespace fluxion::runtime
