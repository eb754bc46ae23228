/// Partial evaluation of a Jaxpr: splitting it into what known inputs determine and the rest.
#pragma once
#include <vector>

#include "fluxion/jaxpr.hpp"

namespace fluxion {

/// A Jaxpr split by which inputs are known. Running `known` on the known inputs gives the known
/// outputs and the residuals; running `unknown` on (residuals, unknown inputs) gives the rest.
struct PartialEvalSplit {
  Jaxpr known;                  // known inputs -> (known outputs..., residuals...)
  Jaxpr unknown;                // (residuals..., unknown inputs...) -> unknown outputs
  std::vector<bool> out_known;  // per output of the original Jaxpr
  size_t num_residuals = 0;
};

/// Splits `jaxpr`: an equation is unknown when any of its inputs is; `unknown_inputs[i]` marks
/// the unknown invars. Constants stay constants of whichever side uses them.
PartialEvalSplit partial_eval_jaxpr(const Jaxpr& jaxpr, const std::vector<bool>& unknown_inputs);

}  // namespace fluxion
