/// The control-flow and call-like kernels of the CUDA backend: cond, while, scan and the primitives
/// that call one sub-Jaxpr (jit_call, checkpoint, custom_jvp_call, custom_vjp_call, custom_lin).
/// They evaluate their sub-Jaxprs equation by equation with Exec::backend's kernels
/// (eval_jaxpr_on), on a copy of the Jaxpr whose constants and literals live on the inputs' device
/// (DeviceJaxpr). Predicates and branch indices are the only values read on the host
/// (Exec::to_host); loop carries stay on the device; results reach the preallocated outputs through
/// a copy body, never memcpy (device pointers). Semantics are the reference kernels' (primitives/
/// cond.cpp, while_loop.cpp, scan.cpp): clamped branch index, while's max_steps, scan's reverse
/// order with ys stacked in the order of xs.
#pragma once
#include <algorithm>
#include <memory>
#include <vector>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"
#include "fluxion/checkpoint.hpp"
#include "fluxion/control_flow.hpp"
#include "fluxion/cuda.hpp"
#include "fluxion/custom_rules.hpp"
#include "fluxion/jaxpr.hpp"
#include "fluxion/jit.hpp"
#include "primitives/control_flow_params.hpp"

namespace fluxion::cuda {
namespace control_flow_kernels {

/// A sub-Jaxpr ready to run on `device`: the Jaxpr itself when its constants and literals are
/// already there (CPU tensors, cuda_emulated), else a copy holding device copies of them, made
/// once per kernel call (a loop reuses it every iteration).
class DeviceJaxpr {
 public:
  DeviceJaxpr(const Jaxpr& j, Device device) : jaxpr_(&j) {
    if (!elsewhere(j, device)) return;
    auto copy = std::make_shared<Jaxpr>(j);
    for (Tensor& c : copy->consts) c = device_put(c, device);
    for (Equation& e : copy->equations)
      for (Atom& a : e.inputs)
        if (a.is_literal()) a.literal = device_put(a.literal, device);
    for (Atom& a : copy->outputs)
      if (a.is_literal()) a.literal = device_put(a.literal, device);
    copy_ = std::move(copy);
    jaxpr_ = copy_.get();
  }

  template <class Exec> std::vector<Tensor> run(const std::vector<Tensor>& args) const {
    return eval_jaxpr_on(*jaxpr_, args, Exec::backend);
  }

 private:
  static bool elsewhere(const Jaxpr& j, Device device) {
    for (const Tensor& c : j.consts)
      if (c.device() != device) return true;
    for (const Equation& e : j.equations)
      for (const Atom& a : e.inputs)
        if (a.is_literal() && a.literal.device() != device) return true;
    for (const Atom& a : j.outputs)
      if (a.is_literal() && a.literal.device() != device) return true;
    return false;
  }

  const Jaxpr* jaxpr_;
  std::shared_ptr<const Jaxpr> copy_;  // null when the Jaxpr is used as is
};

/// Copies `count` elements from `src` (from element `src_at`) into `dst` (from element `dst_at`),
/// on the device, as one body launch. Both have the same dtype.
template <class Exec>
void copy_elements(const Tensor& src, int64_t src_at, const Tensor& dst, int64_t dst_at, int64_t count) {
  if (count == 0) return;
  dispatch_storage_dtype(src.dtype(), [&](auto tag) {  // carries may be f16/bf16: moved, never computed on
    using T = typename decltype(tag)::type;
    Exec::for_each(count, CopyBody<T>{src.data<T>() + src_at, dst.mutable_data<T>() + dst_at});
  });
}

/// Copies concrete `from` into the kernel's preallocated `to` (same avals).
template <class Exec> void copy_outputs(const char* op, const std::vector<Tensor>& from, std::vector<Tensor>& to) {
  for (size_t i = 0; i < to.size(); ++i) copy_elements<Exec>(from[i].concrete(op), 0, to[i], 0, to[i].size());
}

/// The one value of a rank-0 device tensor, read on the host.
template <class Exec, class T> T read_scalar(const Tensor& t) {
  T v{};
  Exec::to_host(&v, t.data<T>(), sizeof(T), t.device());
  return v;
}

using Slices = std::vector<Tensor>;
inline Slices part(const Slices& v, size_t from, size_t n) {
  return Slices(v.begin() + static_cast<std::ptrdiff_t>(from), v.begin() + static_cast<std::ptrdiff_t>(from + n));
}
inline Slices cat(Slices a, const Slices& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// A call-like primitive: its sub-Jaxpr on the inputs, results copied into `out`.
template <class Exec>
void run_call(const char* op, const Jaxpr& j, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Device device = in.empty() ? (out.empty() ? Device::cpu() : out[0].device()) : in[0].device();
  copy_outputs<Exec>(op, DeviceJaxpr(j, device).run<Exec>(in), out);
}

/// cond: in = (index: i32[] or bool[], operands...); runs branches[clamp(index)].
template <class Exec>
void run_cond(const std::vector<const Jaxpr*>& branches, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Tensor& index = in[0].concrete("cond");
  const int64_t i =
      index.dtype() == boolean ? int64_t(read_scalar<Exec, bool>(index)) : int64_t(read_scalar<Exec, int32_t>(index));
  const size_t pick = static_cast<size_t>(std::clamp<int64_t>(i, 0, static_cast<int64_t>(branches.size()) - 1));
  const Slices ops(in.begin() + 1, in.end());
  copy_outputs<Exec>("cond", DeviceJaxpr(*branches[pick], in[0].device()).run<Exec>(ops), out);
}

/// while: in = (cond consts..., body consts..., carry...); at most max_steps iterations (-1: no
/// bound) while cond(cond consts, carry) holds.
template <class Exec> void run_while(const Jaxpr& cond, const Jaxpr& body, size_t ncc, size_t nbc, int64_t max_steps,
                                     const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Device device = in.empty() ? Device::cpu() : in[0].device();
  const DeviceJaxpr c(cond, device), b(body, device);
  const Slices cc = part(in, 0, ncc), bc = part(in, ncc, nbc);
  Slices carry = part(in, ncc + nbc, out.size());
  for (int64_t step = 0; max_steps < 0 || step < max_steps; ++step) {
    const Tensor pred = c.run<Exec>(cat(cc, carry))[0].concrete("while");
    if (!read_scalar<Exec, bool>(pred)) break;
    carry = b.run<Exec>(cat(bc, carry));
  }
  copy_outputs<Exec>("while", carry, out);
}

/// Elements of one row (one step's slice) of a tensor stacked along axis 0 over `length` steps.
inline int64_t row_size(const Tensor& stacked, int64_t length) { return length == 0 ? 0 : stacked.size() / length; }

/// scan: in = (consts..., init carry..., xs...), out = (final carry..., ys...). Step s visits row
/// i = s (or length-1-s when `reverse`) of every xs and writes row i of every ys.
template <class Exec> void run_scan(const Jaxpr& body, size_t nc, size_t ncar, int64_t length, bool reverse,
                                    const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const Device device = in.empty() ? Device::cpu() : in[0].device();
  const DeviceJaxpr b(body, device);
  const Slices consts = part(in, 0, nc), xs = part(in, nc + ncar, in.size() - nc - ncar);
  Slices carry = part(in, nc, ncar);
  for (int64_t step = 0; step < length; ++step) {
    const int64_t i = reverse ? length - 1 - step : step;
    Slices args = cat(consts, carry);
    for (const Tensor& x : xs) {
      AbstractValue row = x.aval();
      row.shape.dims().erase(row.shape.dims().begin());
      Tensor r = fluxion::empty(row, device);
      copy_elements<Exec>(x, i * r.size(), r, 0, r.size());
      args.push_back(std::move(r));
    }
    const Slices r = b.run<Exec>(args);
    carry = part(r, 0, ncar);
    for (size_t k = ncar; k < out.size(); ++k) {
      const int64_t n = row_size(out[k], length);
      copy_elements<Exec>(r[k].concrete("scan"), 0, out[k], i * n, n);
    }
  }
  std::vector<Tensor> carry_out = part(out, 0, ncar);
  copy_outputs<Exec>("scan", carry, carry_out);
}

/// Kernel of a call-like primitive: Handle() names it; its callee rule gives the sub-Jaxpr.
template <class Exec, const Primitive& (*Handle)()>
void call_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const Primitive& p = Handle();
  run_call<Exec>(p.name.c_str(), p.callee(params), in, out);
}

// The kernels of the primitives whose params hold SubJaxprs by name (P: their params struct,
// primitives/control_flow_params.hpp).
template <class Exec, class P>
void cond_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  std::vector<const Jaxpr*> branches;
  for (const auto& b : params.as<P>().branches) branches.push_back(&b.jaxpr());
  run_cond<Exec>(branches, in, out);
}
template <class Exec, class P>
void while_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const P& p = params.as<P>();
  run_while<Exec>(p.cond.jaxpr(), p.body.jaxpr(), p.ncc(), p.nbc(), p.max_steps, in, out);
}
template <class Exec, class P>
void scan_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const P& p = params.as<P>();
  run_scan<Exec>(p.body.jaxpr(), p.nc(), p.ncar(), p.length, p.reverse, in, out);
}
template <class Exec, class P>
void checkpoint_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  run_call<Exec>("checkpoint", params.as<P>().body.jaxpr(), in, out);
}

}  // namespace control_flow_kernels

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_control_flow_kernels() {
  using namespace control_flow_kernels;
  runtime::set_kernel(jit_call_p(), Exec::backend, &call_kernel<Exec, &jit_call_p>);
  runtime::set_kernel(custom_jvp_call_p(), Exec::backend, &call_kernel<Exec, &custom_jvp_call_p>);
  runtime::set_kernel(custom_vjp_call_p(), Exec::backend, &call_kernel<Exec, &custom_vjp_call_p>);
  runtime::set_kernel(custom_lin_p(), Exec::backend, &call_kernel<Exec, &custom_lin_p>);
  runtime::set_kernel(cond_p(), Exec::backend, &cond_kernel<Exec, cond_detail::CondParams>);
  runtime::set_kernel(while_p(), Exec::backend, &while_kernel<Exec, while_detail::WhileParams>);
  runtime::set_kernel(scan_p(), Exec::backend, &scan_kernel<Exec, scan_detail::ScanParams>);
  runtime::set_kernel(checkpoint_p(), Exec::backend, &checkpoint_kernel<Exec, checkpoint_detail::CheckpointParams>);
}

}  // namespace fluxion::cuda
