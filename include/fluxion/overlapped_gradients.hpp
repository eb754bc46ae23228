/// Data-parallel gradient averaging overlapped with the backward pass, the way PyTorch's DDP hooks work: each
/// watched group of parameters starts its all_mean on a communication thread as soon as the backward pass has
/// finished its gradient, while the backward pass goes on with the layers before it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "fluxion/custom_rules.hpp"
#include "fluxion/pytree.hpp"

namespace fluxion::distributed {

/// Usage, in an eager training step (not under jit or vmap, where there is no backward pass to overlap with):
///
///   fx::distributed::OverlappedGradients sync("world");
///   auto loss = [&](const Params& p) {       // watch each layer where it is used, so its
///     Tensor h = layer(sync.watch(p.l1), x); // gradient completes early in the backward pass
///     return fx::all_mean(head(sync.watch(p.l2), h), "world");
///   };
///   fx::grad(loss)(params);                  // starts one all_mean per watch call
///   Params g{sync.gradients(0, params.l1), sync.gradients(1, params.l2)};  // waits
///
/// Every rank must watch the same groups in the same order. Each watch is one collective (the group's leaves
/// flattened into one buffer). A new step starts at the first watch after gradients() was read.
class OverlappedGradients {
 public:
  explicit OverlappedGradients(std::string axis_name = "world");
  ~OverlappedGradients();
  OverlappedGradients(const OverlappedGradients&) = delete;
  OverlappedGradients& operator=(const OverlappedGradients&) = delete;

  /// Identity on `group` (a Tensor or pytree); its gradient's mean over the axis starts in the backward pass.
  template <class Tree> Tree watch(const Tree& group) {
    std::vector<Tensor> leaves = tree_leaves(group);
    std::vector<Tensor> out = watch_flat(leaves);
    auto it = out.cbegin();
    return PyTree<Tree>::rebuild(group, it);
  }

  /// The averaged gradient of the `index`-th watched group of this step, shaped like `like`; waits for it.
  /// Throws the communication thread's error (a rank that failed, a timeout) if there was one.
  template <class Tree> Tree gradients(size_t index, const Tree& like) {
    std::vector<Tensor> leaves = gradients_flat(index);
    auto it = leaves.cbegin();
    return PyTree<Tree>::rebuild(like, it);
  }

  /// Waits until every started reduction has finished.
  void wait();

 private:
  std::vector<Tensor> watch_flat(const std::vector<Tensor>& leaves);
  std::vector<Tensor> gradients_flat(size_t index);
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace fluxion::distributed
