// half_kernels: the eager side of "f16/bf16 compute in f32" (eval_primitive and the plan runners' kernel
// steps); passes/widen_half.cpp writes the same rewrite into Jaxprs for jit.
#include "transforms/half_kernels.hpp"

#include <algorithm>

#include "primitives/conversion.hpp"
#include "runtime/backend.hpp"

namespace fluxion::half_kernels {
namespace half_kernels_detail {

bool any_half(const std::vector<AbstractValue>& avals) {
  return std::any_of(avals.begin(), avals.end(), [](const AbstractValue& a) { return is_half(a.dtype); });
}

bool any_half(const std::vector<Tensor>& values) {
  return std::any_of(values.begin(), values.end(), [](const Tensor& t) { return is_half(t.dtype()); });
}

/// `x` converted to `to` into `out` (allocated like x on its device) with `backend`'s conversion kernel; host
/// values under a CUDA plan (its emulated runner) with the CPU's.
void convert_into(const Tensor& x, DType to, Backend backend, Tensor& out) {
  if (backend == Backend::cuda && !x.device().is_cuda()) backend = Backend::cpu;
  const Primitive& convert = primitives::conversion_family::convert_element_type_p();
  runtime::ensure_kernel_table(backend);
  const Kernel k = convert.kernel(backend);
  if (!k)
    detail::fail<NotImplementedError>("convert_element_type", "no ", backend_name(backend), " kernel to convert ",
                                      x.aval(), " to ", to, ".");
  std::vector<Tensor> in{x}, outs{out};
  k(in, primitives::conversion_family::ConvertElementTypeParams(to), outs);
}

}  // namespace half_kernels_detail

std::shared_ptr<const Params> widened_params(const Primitive& p, const std::vector<AbstractValue>& inputs,
                                             const std::vector<AbstractValue>& outputs, const Params& params) {
  if (&p == &primitives::conversion_family::convert_element_type_p()) return nullptr;
  if (!half_kernels_detail::any_half(inputs) && !half_kernels_detail::any_half(outputs)) return nullptr;
  return params.with_half_as_f32();
}

void run_kernel(const Primitive& p, Kernel k, Backend backend, const std::vector<Tensor>& inputs, const Params& params,
                std::vector<Tensor>& outputs) {
  using half_kernels_detail::any_half;
  if (!any_half(inputs) && !any_half(outputs)) return k(inputs, params, outputs);
  std::vector<AbstractValue> in_avals, out_avals;
  for (const Tensor& t : inputs) in_avals.push_back(t.aval());
  for (const Tensor& t : outputs) out_avals.push_back(t.aval());
  const std::shared_ptr<const Params> wide = widened_params(p, in_avals, out_avals, params);
  if (!wide) return k(inputs, params, outputs);
  std::vector<Tensor> wide_in = inputs;
  for (Tensor& t : wide_in) {
    if (!is_half(t.dtype())) continue;
    Tensor f = empty(AbstractValue{t.shape(), f32}, t.device());
    half_kernels_detail::convert_into(t, f32, backend, f);
    t = f;
  }
  // The f32 results: half ones in fresh buffers (rounded into `outputs` below), the others written in place.
  std::vector<Tensor> wide_out = outputs;
  for (Tensor& t : wide_out)
    if (is_half(t.dtype())) t = empty(AbstractValue{t.shape(), f32}, t.device());
  for (AbstractValue& a : in_avals) a.dtype = compute_dtype(a.dtype);
  const std::vector<AbstractValue> expected = p.abstract_eval(in_avals, *wide);
  for (size_t i = 0; i < wide_out.size(); ++i)
    if (i >= expected.size() || !(expected[i] == wide_out[i].aval()))
      detail::fail<Error>(p.name.c_str(), "internal: computing ", outputs[i].aval(), " in f32 gives ",
                          i < expected.size() ? expected[i] : AbstractValue{}, " instead of ", wide_out[i].aval(),
                          ". Report this with the function that reached it.");
  k(wide_in, *wide, wide_out);
  for (size_t i = 0; i < outputs.size(); ++i)
    if (is_half(outputs[i].dtype()))
      half_kernels_detail::convert_into(wide_out[i], outputs[i].dtype(), backend, outputs[i]);
}

}  // namespace fluxion::half_kernels
