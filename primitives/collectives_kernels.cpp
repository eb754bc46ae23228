// The collectives' kernels, one per collective and the same on every backend: the operand is laid out as
// one contiguous member-major buffer, the transport of the axis name's process group moves it, and the
// result is laid out back. Only all_gather, reduce_scatter and all_to_all with a non-leading axis move
// bytes around (block copies); the others hand the tensors' own storage to the transport.
#include <algorithm>
#include <atomic>
#include <cstring>

#include "backends/distributed/transport.hpp"
#include "fluxion/collectives.hpp"
#include "fluxion/cuda.hpp"
#include "primitives/collectives.hpp"
#include "primitives/shape.hpp"

namespace fluxion::primitives::collectives_detail {

using distributed_detail::CollectiveCall;
using distributed_detail::CollectiveKind;
using distributed_detail::ReduceOp;
using distributed_detail::Transport;

// [outer, blocks, inner] of this layout.
struct BlockLayout {
  int64_t outer = 1, blocks = 1, inner = 1;  // inner in elements
};

void copy_bytes(void* dst, const void* src, int64_t nbytes, Device device) {
  if (nbytes <= 0) return;
  if (device.is_cuda()) cuda::memory::copy(dst, device, src, device, nbytes);
  else std::memcpy(dst, src, static_cast<size_t>(nbytes));
}

// x's elements seen as [a, b, inner], as a new contiguous [b, a, inner]: the transpose primitive's kernel on
// x's device (one kernel launch on a GPU).
Tensor swap_leading(const Tensor& x, int64_t a, int64_t b, int64_t inner) {
  const Tensor view = make_view(x, AbstractValue{Shape({a, b, inner}), x.dtype()});
  const Backend backend = x.device().is_cuda() ? Backend::cuda : Backend::cpu;
  return eval_primitive(shape_family::transpose_p(), {view}, shape_family::TransposeParams({1, 0, 2}), backend)[0];
}

// Layout of `shape` split at `axis` into `blocks` equal blocks: [prod(shape[:axis]), blocks, rest].
BlockLayout layout_at(const Shape& shape, int64_t axis, int64_t blocks) {
  BlockLayout l;
  l.blocks = blocks;
  for (int64_t d = 0; d < axis; ++d) l.outer *= shape[d];
  const int64_t total = shape.num_elements();
  l.inner = l.outer * blocks == 0 ? 0 : total / (l.outer * blocks);
  return l;
}

void* raw(const Tensor& t) { return t.array("collective").data(); }
int64_t nbytes(const Tensor& t) { return t.size() * dtype_size(t.dtype()); }

// A buffer of `elements` elements on `device`, freed at scope exit: the packed side of a reordered collective.
class Scratch {
 public:
  Scratch(int64_t elements, DType dtype, Device device)
      : tensor_(empty(AbstractValue{Shape({elements}), dtype}, device)) {}
  void* data() { return raw(tensor_); }
  const Tensor& tensor() const { return tensor_; }

 private:
  Tensor tensor_;
};

Transport& transport_checked(const std::string& name, int64_t axis_size, const char* op) {
  Transport& t = distributed_detail::transport_for_axis(name, op);
  if (axis_size > 0 && t.size() != axis_size)
    detail::fail<Error>(op, "axis '", name, "' had ", axis_size, " members when the program was traced, but ",
                        t.describe(), " has ", t.size(), ". Trace (or jit) the function again for this group.");
  return t;
}

std::atomic<int64_t> stats_calls{0}, stats_bytes{0};

// Runs `c` on `t`, counted in collective_stats().
void run_counted(Transport& t, const CollectiveCall& c) {
  t.run(c);
  stats_calls.fetch_add(1, std::memory_order_relaxed);
  const bool sends = c.kind != CollectiveKind::broadcast || c.root == t.rank();
  if (sends) stats_bytes.fetch_add(c.send_count * dtype_size(c.dtype), std::memory_order_relaxed);
}

CollectiveCall call_of(const char* op, CollectiveKind kind, const Tensor& x, Tensor& out) {
  CollectiveCall c;
  c.op = op;
  c.kind = kind;
  c.dtype = x.dtype();
  c.shape = x.shape().dims();
  c.send = raw(x);
  c.recv = raw(out);
  c.send_count = x.size();
  c.recv_count = out.size();
  c.device = x.device();
  return c;
}

template <CollectiveOp Op>
void collective_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  if constexpr (Op == CollectiveOp::index) {
    const auto& p = params.as<NamedAxisParams>();
    const int32_t r = transport_checked(p.axis_name, p.axis_size, "axis_index").rank();
    cuda::memory::copy(raw(out[0]), out[0].device(), &r, Device::cpu(), sizeof r);
  } else if constexpr (Op == CollectiveOp::pvary) {
    copy_bytes(raw(out[0]), raw(in[0]), nbytes(in[0]), in[0].device());
  } else if constexpr (Op == CollectiveOp::sum || Op == CollectiveOp::mean || Op == CollectiveOp::max ||
                       Op == CollectiveOp::min) {
    const auto& p = params.as<NamedAxisParams>();
    const char* op = Op == CollectiveOp::sum    ? "all_sum"
                     : Op == CollectiveOp::mean ? "all_mean"
                     : Op == CollectiveOp::max  ? "all_max"
                                                : "all_min";
    Transport& t = transport_checked(p.axis_name, p.axis_size, op);
    CollectiveCall c = call_of(op, CollectiveKind::all_reduce, in[0], out[0]);
    c.reduce = Op == CollectiveOp::max ? ReduceOp::max : Op == CollectiveOp::min ? ReduceOp::min : ReduceOp::sum;
    run_counted(t, c);
    if constexpr (Op == CollectiveOp::mean) {
      // The mean of the sum: on the host here; a device tensor is divided by the div kernel of its device.
      const Tensor& y = out[0];
      if (y.device().is_cuda()) {
        Tensor n = empty(AbstractValue{Shape{}, y.dtype()}, y.device());
        const double size = static_cast<double>(t.size());
        const float size32 = static_cast<float>(size);
        cuda::memory::copy(raw(n), y.device(), y.dtype() == f32 ? static_cast<const void*>(&size32) : &size,
                           Device::cpu(), dtype_size(y.dtype()));
        Tensor q = eval_primitive(*find_primitive("div"), {y, n}, no_params(), Backend::cuda)[0];
        copy_bytes(raw(y), raw(q), nbytes(y), y.device());
      } else if (y.dtype() == f32) {
        float* v = y.mutable_data<float>();
        for (int64_t i = 0; i < y.size(); ++i) v[i] = v[i] / static_cast<float>(t.size());
      } else {
        double* v = y.mutable_data<double>();
        for (int64_t i = 0; i < y.size(); ++i) v[i] = v[i] / static_cast<double>(t.size());
      }
    }
  } else if constexpr (Op == CollectiveOp::broadcast) {
    const auto& p = params.as<BroadcastParams>();
    Transport& t = transport_checked(p.axis_name, p.axis_size, "broadcast");
    CollectiveCall c = call_of("broadcast", CollectiveKind::broadcast, in[0], out[0]);
    c.root = p.root;
    run_counted(t, c);
  } else if constexpr (Op == CollectiveOp::gather || Op == CollectiveOp::scatter) {
    const auto& p = params.as<GatherParams>();
    const bool gather = Op == CollectiveOp::gather;
    const char* op = gather ? "all_gather" : "reduce_scatter";
    Transport& t = transport_checked(p.axis_name, p.axis_size, op);
    const int64_t n = t.size();
    // The member-major side: all_gather receives [n, x], reduce_scatter sends [n, out].
    const Shape& spread = gather ? out[0].shape() : in[0].shape();
    const BlockLayout l = layout_at(spread, p.axis, n);
    CollectiveCall c = call_of(op, gather ? CollectiveKind::all_gather : CollectiveKind::reduce_scatter, in[0], out[0]);
    if (l.outer == 1) return run_counted(t, c);
    if (gather) {  // received member-major [n, outer, inner], laid out [outer, n, inner]
      Scratch received(out[0].size(), in[0].dtype(), in[0].device());
      c.recv = received.data();
      run_counted(t, c);
      const Tensor laid = swap_leading(received.tensor(), l.blocks, l.outer, l.inner);
      copy_bytes(raw(out[0]), raw(laid), nbytes(out[0]), out[0].device());
    } else {  // sent member-major
      const Tensor packed = swap_leading(in[0], l.outer, l.blocks, l.inner);
      c.send = raw(packed);
      run_counted(t, c);
    }
  } else if constexpr (Op == CollectiveOp::to_all) {
    const auto& p = params.as<AllToAllParams>();
    Transport& t = transport_checked(p.axis_name, p.axis_size, "all_to_all");
    const int64_t n = t.size();
    const BlockLayout split = layout_at(in[0].shape(), p.split_axis, n);
    const BlockLayout concat = layout_at(out[0].shape(), p.concat_axis, n);
    CollectiveCall c = call_of("all_to_all", CollectiveKind::all_to_all, in[0], out[0]);
    Tensor packed;  // block r of the split axis, member-major
    if (split.outer != 1) {
      packed = swap_leading(in[0], split.outer, split.blocks, split.inner);
      c.send = raw(packed);
    }
    Scratch received(concat.outer == 1 ? 0 : out[0].size(), in[0].dtype(), in[0].device());
    if (concat.outer != 1) c.recv = received.data();
    run_counted(t, c);
    if (concat.outer != 1) {  // block s came from member s: concatenated along the concat axis
      const Tensor laid = swap_leading(received.tensor(), concat.blocks, concat.outer, concat.inner);
      copy_bytes(raw(out[0]), raw(laid), nbytes(out[0]), out[0].device());
    }
  }
}

template void collective_kernel<CollectiveOp::sum>(const std::vector<Tensor>&, const Params&, std::vector<Tensor>&);
template void collective_kernel<CollectiveOp::mean>(const std::vector<Tensor>&, const Params&, std::vector<Tensor>&);
template void collective_kernel<CollectiveOp::max>(const std::vector<Tensor>&, const Params&, std::vector<Tensor>&);
template void collective_kernel<CollectiveOp::min>(const std::vector<Tensor>&, const Params&, std::vector<Tensor>&);
template void collective_kernel<CollectiveOp::pvary>(const std::vector<Tensor>&, const Params&, std::vector<Tensor>&);
template void collective_kernel<CollectiveOp::gather>(const std::vector<Tensor>&, const Params&, std::vector<Tensor>&);
template void collective_kernel<CollectiveOp::scatter>(const std::vector<Tensor>&, const Params&, std::vector<Tensor>&);
template void collective_kernel<CollectiveOp::to_all>(const std::vector<Tensor>&, const Params&, std::vector<Tensor>&);
template void collective_kernel<CollectiveOp::broadcast>(const std::vector<Tensor>&, const Params&,
                                                         std::vector<Tensor>&);
template void collective_kernel<CollectiveOp::index>(const std::vector<Tensor>&, const Params&, std::vector<Tensor>&);

}  // namespace fluxion::primitives::collectives_detail

namespace fluxion {

CollectiveStats collective_stats() {
  using namespace primitives::collectives_detail;
  return {stats_calls.load(std::memory_order_relaxed), stats_bytes.load(std::memory_order_relaxed)};
}

void reset_collective_stats() {
  primitives::collectives_detail::stats_calls.store(0);
  primitives::collectives_detail::stats_bytes.store(0);
}

}  // namespace fluxion
