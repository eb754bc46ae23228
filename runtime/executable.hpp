/// The jit executable: an optimized Jaxpr planned once (runtime/planner.hpp) and run many times by
/// its backend's plan runner (runtime/backend.hpp), without allocating in steady state.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fluxion/jaxpr.hpp"

namespace fluxion {

namespace runtime {
struct Plan;
struct RunState;
class PlanRunner;
class LoopRunner;
}  // namespace runtime

/// A compiled plan. Thread-safe: concurrent calls each take their own RunState.
class Executable {
 public:
  /// Plans `jaxpr` (already optimized) for `device` and lowers it with the plan runner registered
  /// for `device`'s backend now (runtime::plan_runner).
  Executable(std::shared_ptr<const Jaxpr> jaxpr, Device device);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  /// Runs the plan on `args` (the traced avals, checked); `outs` receives one tensor per output.
  /// Output buffers are reused when the caller has dropped the previous call's results.
  void run(const std::vector<Tensor>& args, std::vector<Tensor>& outs) const;
  /// run() for arguments already known to match the traced avals (jit checked them).
  void run_unchecked(const std::vector<Tensor>& args, std::vector<Tensor>& outs) const;
  /// run_unchecked() taking the arguments over (`args` is left with empty tensors): no atomic
  /// reference-count update per argument.
  void run_unchecked(std::vector<Tensor>&& args, std::vector<Tensor>& outs) const;
  const Jaxpr& jaxpr() const { return *jaxpr_; }
  const runtime::Plan& plan() const { return *plan_; }
  /// Human-readable plan: steps, fused groups and buffer assignment (debugging, tests).
  std::string describe() const;
  /// Bytes of intermediate buffers one call uses (after reuse by liveness).
  int64_t intermediate_bytes() const;

 private:
  friend class runtime::LoopRunner;  // holds one state across a loop's steps (runtime/loop_runner.hpp)
  std::unique_ptr<runtime::RunState> acquire() const;
  void release(std::unique_ptr<runtime::RunState> s) const;
  /// Runs the plan on a state whose inputs `bind_args(state)` sets.
  template <class BindArgs> void run_bound(const BindArgs& bind_args, std::vector<Tensor>& outs) const;

  std::shared_ptr<const Jaxpr> jaxpr_;
  const runtime::PlanRunner* runner_;
  std::unique_ptr<runtime::Plan> plan_;
  mutable std::atomic<runtime::RunState*> fast_{nullptr};  // one idle state, taken without locking
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<runtime::RunState>> idle_;
};

/// Runs the optimization passes on `traced` and plans it for `device`.
std::shared_ptr<const Executable> compile_jaxpr(const Jaxpr& traced, Device device);

}  // namespace fluxion
