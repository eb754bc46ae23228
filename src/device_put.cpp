// device_put: moving concrete tensors between devices.
#include "fluxion/cuda.hpp"
#include "fluxion/errors.hpp"
#include "fluxion/interpreter.hpp"

namespace fluxion {

Tensor device_put(const Tensor& x, Device device) {
  if (x.device() == device) return x;  // storage is immutable: sharing it is a copy
  if (device.is_cuda() && !cuda::is_available())
    detail::fail<DeviceError>("device_put", "cannot move ", x.aval(), " from ", x.device(), " to ", device, ": ",
                              cuda::unavailable_reason(), ". Keep the tensor on fx::Device::cpu().");
  if (x.is_tracer()) {
    const auto& tracer = static_cast<const TracerImpl&>(*x.impl());
    detail::fail<NotImplementedError>("device_put", "moving a value traced by ", tracer.owner()->transform, " (",
                                      x.aval(), ") from ", x.device(), " to ", device,
                                      " is not supported yet. Move the inputs with "
                                      "fx::device_put before calling the transformed function.");
  }
  const ArrayImpl& src = x.array("device_put");
  Tensor out = empty(x.aval(), device);
  cuda::memory::copy(out.array().data(), device, src.data(), x.device(), x.size() * dtype_size(x.dtype()));
  return out;
}

}  // namespace fluxion
