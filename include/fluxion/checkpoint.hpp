/// checkpoint (rematerialisation): reverse mode recomputes a function's intermediate values in the
/// backward pass instead of storing them from the forward pass.
///
/// `fx::checkpoint(f)` is called like `f` (Tensor and pytree arguments are traced, other arguments
/// are static). Eagerly it simply calls `f`. Under a transform, `f` is traced into one `checkpoint`
/// primitive holding its Jaxpr. Under grad / vjp / linearize, the only values of the call kept for
/// the backward pass are its inputs: the residuals (e.g. cos(x) for sin(x), the activations of a
/// layer) are recomputed from them when the backward pass reaches the call.
///
/// Cost: one extra forward pass of `f` during the backward pass, in exchange for storing only
/// f's inputs instead of all its residuals. Splitting a long chain of n steps into about sqrt(n)
/// checkpointed segments turns O(n) stored residuals into O(sqrt(n)). It composes with grad, jvp,
/// vmap, jit and hessian, nested; under jvp and vmap alone it changes nothing but adds one call.
#pragma once
#include <memory>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/control_flow.hpp"
#include "fluxion/jit.hpp"
#include "fluxion/pytree.hpp"

namespace fluxion {

/// The primitive: inputs (values f closed over from enclosing transforms..., f's leaves...), one
/// closed sub-Jaxpr in its params.
const Primitive& checkpoint_p();

namespace checkpoint_detail {

/// Traces `fn` on tracers shaped like `leaves` and binds one `checkpoint` primitive on them.
std::vector<Tensor> checkpoint_flat(const control_flow_detail::FlatFn& fn, const std::vector<Tensor>& leaves);

/// Argument `a` with its leaves taken from `leaves` from `pos` on (static arguments unchanged).
template <class Arg> Arg rebuild_argument(const Arg& a, const std::vector<Tensor>& leaves, size_t& pos) {
  if constexpr (is_pytree_v<Arg>) return control_flow_detail::rebuild_tree(a, leaves, pos);
  else return a;
}

}  // namespace checkpoint_detail

/// A checkpointed function: call it like the original.
template <class F> class Checkpointed {
 public:
  explicit Checkpointed(F f) : f_(std::move(f)) {}

  template <class... Args> auto operator()(const Args&... args) const {
    using Out = std::decay_t<decltype(f_(args...))>;
    static_assert(is_pytree_v<Out>, "fx::checkpoint: the function must return a Tensor or a pytree of Tensors");
    // Nothing is stored for a backward pass eagerly: no primitive needed.
    if (&current_interpreter() == &eval_interpreter()) return Out(f_(args...));
    std::vector<Tensor> leaves;
    (jit_detail::flatten_dynamic(args, leaves), ...);
    auto structure = std::make_shared<std::optional<Out>>();
    const F& f = f_;
    control_flow_detail::FlatFn fn = [&f, &args..., structure](const std::vector<Tensor>& traced) {
      size_t pos = 0;
      // Braced initialisation runs left to right, so leaves are consumed in argument order.
      std::tuple<Args...> rebuilt{checkpoint_detail::rebuild_argument(args, traced, pos)...};
      Out out = std::apply(f, rebuilt);
      *structure = out;
      return tree_leaves(out);
    };
    std::vector<Tensor> outs = checkpoint_detail::checkpoint_flat(fn, leaves);
    auto it = outs.cbegin();
    return PyTree<Out>::rebuild(**structure, it);
  }

 private:
  F f_;
};

/// `f` with rematerialisation: under reverse mode its intermediate values are recomputed in the
/// backward pass (one extra forward pass of f) instead of being stored. See the header comment.
template <class F> Checkpointed<F> checkpoint(F f) { return Checkpointed<F>(std::move(f)); }

}  // namespace fluxion
