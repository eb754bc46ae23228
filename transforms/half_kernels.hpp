/// f16/bf16 arithmetic in f32: the one mechanism by which an equation with half-precision operands or
/// results runs (kernels are instantiated for the computing dtypes only, fluxion/dtype.hpp).
#pragma once
#include <memory>
#include <vector>

#include "fluxion/primitive.hpp"

namespace fluxion::half_kernels {

/// The params of the f32 equation computing `p` on these avals, or nullptr when the equation runs as it is:
/// no operand or result is f16/bf16, `p` converts (convert_element_type has native half kernels), or `p`
/// runs sub-Jaxprs (cond, while, scan, calls: their own equations are widened where they run).
std::shared_ptr<const Params> widened_params(const Primitive& p, const std::vector<AbstractValue>& inputs,
                                             const std::vector<AbstractValue>& outputs, const Params& params);

/// Runs kernel `k` of `p` with `backend`'s conversions into the preallocated `outputs`: directly, or, when
/// widened_params says so, on the inputs converted to f32 with the f32 params, its half results rounded
/// (to nearest even) into `outputs`. Products and reductions so accumulate in f32.
void run_kernel(const Primitive& p, Kernel k, Backend backend, const std::vector<Tensor>& inputs, const Params& params,
                std::vector<Tensor>& outputs);

}  // namespace fluxion::half_kernels
