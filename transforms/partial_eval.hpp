/// Partial evaluation of a Jaxpr: splitting it into what known inputs determine and the rest.
#pragma once
#include <vector>

#include "fluxion/jaxpr.hpp"

namespace fluxion {

/// A Jaxpr split by which inputs are known. Running `known` on the known inputs gives the known
/// outputs and the residuals; running `unknown` on (residuals, unknown inputs) gives the rest.
/// The two Jaxprs number their variables independently of the original.
struct PartialEvalSplit {
  Jaxpr known;                  // known inputs -> (known outputs..., residuals...)
  Jaxpr unknown;                // (residuals..., unknown inputs...) -> unknown outputs
  std::vector<bool> out_known;  // per output of the original Jaxpr
  size_t num_residuals = 0;
  /// Per residual: the index of the original input it is (a known input passed through), or -1.
  std::vector<int> residual_input;
};

/// Splits `jaxpr`; `unknown_inputs[i]` marks the unknown invars. The Jaxpr is replayed under a
/// partial-evaluation stage whose parent records the known side, so every equation is split by
/// its primitive's partial-evaluation rule where it has one (control flow, jit_call, checkpoint:
/// their known parts, primal values included, go to the known side even when some of their
/// inputs are unknown), and is otherwise unknown exactly when one of its inputs is. The unknown
/// side's constants that are known-side values become the residuals, in first-use order.
PartialEvalSplit partial_eval_jaxpr(const Jaxpr& jaxpr, const std::vector<bool>& unknown_inputs);

}  // namespace fluxion
