/// Host-staged kernels: a primitive without device bodies yet runs on the CUDA backend by copying
/// its inputs to the host, running its CPU kernel there, and copying the outputs back to their
/// device. Correct for every input (the CPU kernel's errors, e.g. a singular matrix, are thrown
/// unchanged), but it waits for the device and pays two transfers per call: it is the fallback of
/// decompositions (eigh, svd, qr, ...) until they have cuSOLVER paths, never of an elementwise or
/// indexing primitive. The README's CUDA section lists the primitives that use it.
///
///   runtime::set_kernel(cholesky_p(), Exec::backend, &host_staged_kernel<&cholesky_p>);
#pragma once
#include <string>
#include <vector>

#include "fluxion/cuda.hpp"
#include "fluxion/errors.hpp"
#include "fluxion/primitive.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion::cuda {

/// Runs Handle()'s CPU kernel on host copies of `in` and writes the results into `out` (on any
/// device). Outputs already on the CPU (the emulated backend) are written in place.
template <const Primitive& (*Handle)()>
void host_staged_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const Primitive& p = Handle();
  const Kernel cpu_kernel = p.kernel(Backend::cpu);
  if (!cpu_kernel)
    detail::fail<NotImplementedError>(p.name.c_str(), "has no CPU kernel to stage on the host for the CUDA backend.");
  std::vector<Tensor> host_in;
  host_in.reserve(in.size());
  for (const Tensor& x : in) host_in.push_back(device_put(x, Device::cpu()));
  std::vector<Tensor> host_out;
  host_out.reserve(out.size());
  for (const Tensor& y : out) host_out.push_back(y.device().is_cpu() ? y : fluxion::empty(y.aval(), Device::cpu()));
  cpu_kernel(host_in, params, host_out);
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].device().is_cpu()) continue;
    const int64_t bytes = out[i].size() * dtype_size(out[i].dtype());
    memory::copy(out[i].array("host_staged").data(), out[i].device(), host_out[i].array("host_staged").data(),
                 Device::cpu(), bytes);
  }
}

}  // namespace fluxion::cuda
