// PlanCache: a Jaxpr's per-device plans, and the one compile path (passes, then the planner).
#include "runtime/plan_cache.hpp"

#include <new>

#include "passes/passes.hpp"
#include "runtime/executable.hpp"

namespace fluxion::runtime {

namespace plan_cache_detail {
[[noreturn]] void fail_out_of_memory(const Jaxpr& jaxpr) {
  detail::fail<OutOfMemoryError>("jit", "out of memory while optimizing and planning a program of ",
                                 jaxpr.equations.size(), " equations. Free memory, or make the program smaller: ",
                                 "fx::scan / fx::fori_loop instead of an unrolled loop.");
}
}  // namespace plan_cache_detail

PlanCache::PlanCache(std::shared_ptr<const Jaxpr> jaxpr, JaxprStage stage) : jaxpr_(std::move(jaxpr)), stage_(stage) {}

std::shared_ptr<const Executable> PlanCache::executable(Device device) const {
  // Held while compiling: concurrent first calls wait for the one plan instead of each making one.
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [d, plan] : plans_)
    if (d == device) return plan;
  std::shared_ptr<const Executable> plan;
  try {
    // An optimized Jaxpr with no calls left is planned as it is: shared, not copied.
    if (stage_ == JaxprStage::optimized && !passes::has_calls(*jaxpr_))
      plan = std::make_shared<const Executable>(jaxpr_, device);
    else plan = compile(*jaxpr_, stage_, device);
  } catch (const std::bad_alloc&) { plan_cache_detail::fail_out_of_memory(*jaxpr_); }
  plans_.emplace_back(device, plan);
  return plan;
}

std::vector<Tensor> PlanCache::run(const std::vector<Tensor>& args) const {
  std::vector<Tensor> outs;
  executable(args.empty() ? Device::cpu() : args[0].device())->run(args, outs);
  return outs;
}

std::shared_ptr<const Executable> compile(const Jaxpr& jaxpr, JaxprStage stage, Device device) try {
  auto ready = std::make_shared<const Jaxpr>(stage == JaxprStage::optimized ? passes::finish_for_execution(jaxpr)
                                                                            : passes::optimize_for_execution(jaxpr));
  // The planner prints each planning stage under FLUXION_DUMP_PASSES (runtime/planner.cpp).
  return std::make_shared<const Executable>(std::move(ready), device);
} catch (const std::bad_alloc&) { plan_cache_detail::fail_out_of_memory(jaxpr); }

void run_plan(const Executable& plan, const std::vector<Tensor>& args, std::vector<Tensor>& outs) {
  plan.run(args, outs);
}

void run_plan_unchecked(const Executable& plan, const std::vector<Tensor>& args, std::vector<Tensor>& outs) {
  plan.run_unchecked(args, outs);
}

}  // namespace fluxion::runtime
