// dot_general: contraction of lhs and rhs over paired contracting dims, with paired batch dims
// (XLA/JAX semantics). Output dims: batch (in lhs batch order), lhs free dims, rhs free dims, each
// in order. Bilinear, hence Traits.linear. The CPU kernel maps each batch to one Eigen GEMM
// (backends/cpu/gemm.hpp); the reference sums products in long double
// (backends/reference/dot_general.hpp). Integer products and sums wrap modulo 2^bits.
// Rules: jvp dl.r + l.dr; transpose per operand (a dot_general of the cotangent with the other
// operand, then a transpose into the operand's dim order); batching turns the batch axes into a
// new batch-dim pair, or into one more free dim of the single mapped operand.
#include <algorithm>
#include <sstream>

#define FLUXION_GEMM_DEFINE_KERNELS  // this file compiles the CPU kernels (see gemm.hpp)
#include "backends/cpu/gemm.hpp"
#include "backends/reference/dot_general.hpp"
#include "fluxion/lax.hpp"
#include "primitives/dot_general.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/registry.hpp"

namespace fluxion::cpu::gemm_detail {
FLUXION_GEMM_ALL_KERNELS()
}  // namespace fluxion::cpu::gemm_detail

namespace fluxion::primitives {
namespace dot_general_family {

std::string axes_str(const std::vector<int64_t>& v) {
  std::ostringstream os;
  detail::print_param(os, v);
  return os.str();
}

// `dims` of operand `x` (called `side`) are in range and appear once among `used`.
void check_dims(const Primitive& self, const char* side, const char* what, const AbstractValue& x,
                const std::vector<int64_t>& dims, std::vector<bool>& used) {
  for (int64_t d : dims) {
    if (d < 0 || d >= x.ndim())
      detail::fail<AxisError>(self.name.c_str(), side, " ", what, " dim ", d, " is out of range for ", side, " ", x,
                              " of rank ", x.ndim(), ". Use dims in [0, ", x.ndim(), ").");
    if (used[static_cast<size_t>(d)])
      detail::fail<AxisError>(self.name.c_str(), side, " dim ", d, " of ", x,
                              " appears more than once among the contracting and batch dims. "
                              "Each dim may be contracted or batched once.");
    used[static_cast<size_t>(d)] = true;
  }
}

// Paired dims have equal counts and sizes.
void check_pairs(const Primitive& self, const char* what, const AbstractValue& l, const AbstractValue& r,
                 const AxisPair& pair) {
  if (pair.first.size() != pair.second.size())
    detail::fail<ShapeError>(self.name.c_str(), what, " dims ", axes_str(pair.first), " of lhs ", l, " and ",
                             axes_str(pair.second), " of rhs ", r, " differ in number. Give one rhs dim per lhs dim.");
  for (size_t i = 0; i < pair.first.size(); ++i) {
    const int64_t a = l.shape[pair.first[i]], b = r.shape[pair.second[i]];
    if (a != b)
      detail::fail<ShapeError>(self.name.c_str(), what, " dims ", axes_str(pair.first), " of lhs ", l, " and ",
                               axes_str(pair.second), " of rhs ", r, " have different sizes: lhs dim ", pair.first[i],
                               " is ", a, ", rhs dim ", pair.second[i], " is ", b,
                               ". Paired dims must have equal sizes; transpose or reshape an operand.");
  }
}

std::vector<AbstractValue> dot_general_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                                  const Params& params) {
  check_arity(self, in, 2);
  const AbstractValue &l = in[0], &r = in[1];
  check_dtype_in(self, l, kNumeric);
  check_dtype_in(self, r, kNumeric);
  if (l.dtype != r.dtype)
    detail::fail<DTypeError>(self.name.c_str(), "operand dtypes differ: lhs ", l, " and rhs ", r,
                             ". Convert one with fx::astype (fx::matmul and fx::dot promote automatically).");
  const auto& p = params.as<DotGeneralParams>();
  // Counts first (so sizes can be read pairwise), then ranges and repeats, then sizes.
  if (p.contract.first.size() != p.contract.second.size() || p.batch.first.size() != p.batch.second.size()) {
    const bool c = p.contract.first.size() != p.contract.second.size();
    const AxisPair& pair = c ? p.contract : p.batch;
    detail::fail<ShapeError>(self.name.c_str(), c ? "contracting" : "batch", " dims ", axes_str(pair.first), " of lhs ",
                             l, " and ", axes_str(pair.second), " of rhs ", r,
                             " differ in number. Give one rhs dim per lhs dim.");
  }
  std::vector<bool> lused(static_cast<size_t>(l.ndim()), false), rused(static_cast<size_t>(r.ndim()), false);
  check_dims(self, "lhs", "batch", l, p.batch.first, lused);
  check_dims(self, "lhs", "contracting", l, p.contract.first, lused);
  check_dims(self, "rhs", "batch", r, p.batch.second, rused);
  check_dims(self, "rhs", "contracting", r, p.contract.second, rused);
  check_pairs(self, "batch", l, r, p.batch);
  check_pairs(self, "contracting", l, r, p.contract);
  Shape out;
  for (int64_t d : p.batch.first) out.push_back(l.shape[d]);
  for (int64_t d = 0; d < l.ndim(); ++d)
    if (!lused[static_cast<size_t>(d)]) out.push_back(l.shape[d]);
  for (int64_t d = 0; d < r.ndim(); ++d)
    if (!rused[static_cast<size_t>(d)]) out.push_back(r.shape[d]);
  checked_num_elements(self.name.c_str(), out.dims());
  return {AbstractValue{std::move(out), l.dtype}};
}

template <bool Reference>
void dot_general_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<DotGeneralParams>();
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* l = in[0].data<T>();
      const T* r = in[1].data<T>();
      T* o = out[0].mutable_data<T>();
      if constexpr (Reference)
        reference::dot_general(l, in[0].shape().dims(), r, in[1].shape().dims(), p.contract, p.batch, o);
      else cpu::dot_general(l, in[0].shape().dims(), r, in[1].shape().dims(), p.contract, p.batch, o);
    }
  });
}

// ---- tiles: a large f32/f64 product without batch dims whose operands are read in place ----
// Not with light kernels (C++ interpreters): instantiating the strided GEMMs is what they avoid.
#if !FLUXION_LIGHT_KERNELS

// Products smaller than this are computed whole: a tile's GEMM call and packing cost more than
// re-reading an output that stays in cache anyway (the planner asks only for large outputs).
constexpr double kTileWork = 1 << 20;

cpu::TilePlan dot_general_tile_plan(const std::vector<AbstractValue>& in, const Params& params) {
  const auto& p = params.as<DotGeneralParams>();
  cpu::TilePlan plan;
  if (in.size() != 2 || (in[0].dtype != f32 && in[0].dtype != f64)) return plan;
  const cpu::gemm_detail::MatrixView v =
      cpu::gemm_detail::matrix_view(in[0].shape.dims(), in[1].shape.dims(), p.contract, p.batch);
  if (!v.ok || static_cast<double>(v.m) * static_cast<double>(v.n) * static_cast<double>(v.k) < kTileWork) return plan;
  plan.m = v.m, plan.n = v.n, plan.k = v.k;
  plan.data[0] = v.trans_a, plan.data[1] = v.trans_b;
  return plan;
}

void dot_general_tile(const cpu::TilePlan& plan, const std::vector<Tensor>& in, int64_t r0, int64_t r1, int64_t c0,
                      int64_t c1, void* out, int64_t ld) {
  cpu::gemm_detail::MatrixView v;
  v.ok = true, v.trans_a = plan.data[0] != 0, v.trans_b = plan.data[1] != 0;
  v.m = plan.m, v.n = plan.n, v.k = plan.k;
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* l = in[0].data<T>();
    const T* r = in[1].data<T>();
    T* o = static_cast<T*>(out);
    using cpu::gemm_detail::product_tile;
    if (v.trans_a) {
      if (v.trans_b) product_tile<true, true>(v, l, r, r0, r1, c0, c1, o, ld);
      else product_tile<true, false>(v, l, r, r0, r1, c0, c1, o, ld);
    } else {
      if (v.trans_b) product_tile<false, true>(v, l, r, r0, r1, c0, c1, o, ld);
      else product_tile<false, false>(v, l, r, r0, r1, c0, c1, o, ld);
    }
  };
  if (in[0].dtype() == f32) run(TypeTag<float>());
  else run(TypeTag<double>());
}
#endif

// ---- differentiation and batching rules ----

// Dims of a rank-`rank` operand that are neither contracted nor batched, in order.
std::vector<int64_t> free_dims(int64_t rank, const std::vector<int64_t>& contract, const std::vector<int64_t>& batch) {
  std::vector<int64_t> out;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(contract.begin(), contract.end(), d) == contract.end() &&
        std::find(batch.begin(), batch.end(), d) == batch.end())
      out.push_back(d);
  return out;
}

// Bilinear: d(l . r) = dl . r + l . dr, zero terms skipped.
void dot_general_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
                     const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  primals_out = fluxion::bind(self, primals, params);
  Tensor t;
  if (tangents[0].defined()) t = fluxion::bind1(self, {tangents[0], primals[1]}, params);
  if (tangents[1].defined()) {
    Tensor tr = fluxion::bind1(self, {primals[0], tangents[1]}, params);
    t = t.defined() ? lax::add(t, tr) : tr;
  }
  tangents_out = {t};
}

// Cotangent of the lhs x (aval `x`) of out = dot_general(x, y) from the output cotangent g.
// g's dims are [batch, x free, y free]; contracting g's y-free dims with y's free dims (batching g's
// batch dims with y's) gives [batch, x free, x contracting in y's dim order], which a transpose
// puts back in x's dim order. With `swap` the roles are mirrored (g is [batch, y free, x free]),
// which is how the rhs cotangent is computed.
Tensor transpose_operand(const Tensor& g, const AbstractValue& x, const Tensor& y,
                         const std::vector<int64_t>& x_contract, const std::vector<int64_t>& y_contract,
                         const std::vector<int64_t>& x_batch, const std::vector<int64_t>& y_batch, bool swap) {
  const std::vector<int64_t> x_free = free_dims(x.ndim(), x_contract, x_batch);
  const std::vector<int64_t> y_free = free_dims(y.ndim(), y_contract, y_batch);
  const int64_t nb = static_cast<int64_t>(x_batch.size());
  const int64_t nx = static_cast<int64_t>(x_free.size()), ny = static_cast<int64_t>(y_free.size());
  std::vector<int64_t> g_batch, g_y;
  for (int64_t i = 0; i < nb; ++i) g_batch.push_back(i);
  const int64_t y_start = swap ? nb : nb + nx;
  for (int64_t i = 0; i < ny; ++i) g_y.push_back(y_start + i);
  Tensor r = lax::dot_general(g, y, {g_y, y_free}, {g_batch, y_batch});
  // r's dims name these dims of x: batch, free, then contracting sorted by the paired y dim.
  std::vector<int64_t> order(x_contract.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return y_contract[a] < y_contract[b]; });
  std::vector<int64_t> names = x_batch;
  names.insert(names.end(), x_free.begin(), x_free.end());
  for (int64_t i : order) names.push_back(x_contract[static_cast<size_t>(i)]);
  std::vector<int64_t> perm(names.size());
  bool identity = true;
  for (size_t pos = 0; pos < names.size(); ++pos) {
    perm[static_cast<size_t>(names[pos])] = static_cast<int64_t>(pos);
    identity &= names[pos] == static_cast<int64_t>(pos);
  }
  return identity ? r : lax::transpose(r, perm);
}

// Linear in each operand separately: called with one undefined (linear) operand.
void dot_general_transpose(const Primitive& self, const std::vector<Tensor>& cts_out, const std::vector<Tensor>& inputs,
                           const std::vector<AbstractValue>& in_avals, const Params& params,
                           std::vector<Tensor>& cts_in) {
  const Tensor& g = cts_out[0];
  if (!g.defined()) return;
  const auto& p = params.as<DotGeneralParams>();
  if (!inputs[0].defined() && !inputs[1].defined())
    detail::fail<Error>(self.name.c_str(),
                        "internal: transpose with both operands linear (the product is not linear).");
  if (!inputs[0].defined())
    cts_in[0] = transpose_operand(g, in_avals[0], inputs[1], p.contract.first, p.contract.second, p.batch.first,
                                  p.batch.second, /*swap=*/false);
  if (!inputs[1].defined())
    cts_in[1] = transpose_operand(g, in_avals[1], inputs[0], p.contract.second, p.contract.first, p.batch.second,
                                  p.batch.first, /*swap=*/true);
}

// Dims of an operand mapped along `bdim`: logical dim d is physical d + (d >= bdim).
std::vector<int64_t> shift_dims(const std::vector<int64_t>& dims, int64_t bdim) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(d >= bdim ? d + 1 : d);
  return out;
}

// Both mapped: the two batch axes become a new leading batch-dim pair (output axis 0). One mapped:
// its batch axis is one more free dim of that operand, found where free dims land in the output.
// No transposes, no broadcasts of the unmapped operand.
void dot_general_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                       const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<DotGeneralParams>();
  const int64_t lb = dims[0], rb = dims[1];
  AxisPair contract = p.contract, batch = p.batch;
  if (lb != kNotMapped) {
    contract.first = shift_dims(contract.first, lb);
    batch.first = shift_dims(batch.first, lb);
  }
  if (rb != kNotMapped) {
    contract.second = shift_dims(contract.second, rb);
    batch.second = shift_dims(batch.second, rb);
  }
  const int64_t nb = static_cast<int64_t>(p.batch.first.size());
  int64_t od = 0;
  if (lb != kNotMapped && rb != kNotMapped) {
    batch.first.insert(batch.first.begin(), lb);
    batch.second.insert(batch.second.begin(), rb);
    od = 0;
  } else if (lb != kNotMapped) {
    // Output position of lhs dim lb: after the batch dims and the lhs free dims before it.
    std::vector<int64_t> lfree = free_dims(values[0].ndim() - 1, p.contract.first, p.batch.first);
    od = nb + (std::lower_bound(lfree.begin(), lfree.end(), lb) - lfree.begin());
  } else {
    std::vector<int64_t> lfree = free_dims(values[0].ndim(), p.contract.first, p.batch.first);
    std::vector<int64_t> rfree = free_dims(values[1].ndim() - 1, p.contract.second, p.batch.second);
    od = nb + static_cast<int64_t>(lfree.size()) + (std::lower_bound(rfree.begin(), rfree.end(), rb) - rfree.begin());
  }
  out = fluxion::bind(self, values, DotGeneralParams(std::move(contract), std::move(batch)));
  out_dims = {od};
}

#if FLUXION_LIGHT_KERNELS
constexpr cpu::Lowering kDotGeneralCpuLowering{};
#else
constexpr cpu::Lowering kDotGeneralCpuLowering{nullptr, nullptr, cpu::TileOp::none, &dot_general_tile_plan,
                                               &dot_general_tile};
#endif

const Primitive& dot_general_p() {
  static const Primitive& p = define_primitive("dot_general")
                                  .params<DotGeneralParams>()
                                  .linear()  // bilinear: linear in each operand
                                  .shape(&dot_general_shape_rule)
                                  .reference(&dot_general_kernel<true>)
                                  .cpu(&dot_general_kernel<kLightKernels>)
                                  .cpu_lowering(kDotGeneralCpuLowering)
                                  .jvp(&dot_general_jvp)
                                  .transpose(&dot_general_transpose)
                                  .batch(&dot_general_batch)
                                  .build();
  return p;
}

}  // namespace dot_general_family

void register_dot_general(std::vector<const Primitive*>& list) { list.push_back(&dot_general_family::dot_general_p()); }

}  // namespace fluxion::primitives

namespace fluxion::lax {
Tensor dot_general(const Tensor& lhs, const Tensor& rhs, const AxisPair& contracting, const AxisPair& batch) {
  using namespace primitives::dot_general_family;
  return bind1(dot_general_p(), {lhs, rhs}, DotGeneralParams(contracting, batch));
}
}  // namespace fluxion::lax
