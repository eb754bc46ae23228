// dot_general: contraction of lhs and rhs over paired contracting dims, with paired batch dims
// (XLA/JAX semantics). Output dims: batch (in lhs batch order), lhs free dims, rhs free dims, each
// in order. Bilinear, hence Traits.linear. The CPU kernel maps each batch to one Eigen GEMM
// (backends/cpu/gemm.hpp); the reference sums products in long double
// (backends/reference/dot_general.hpp). Integer products and sums wrap modulo 2^bits.
#include <algorithm>
#include <sstream>

#include "backends/cpu/gemm.hpp"
#include "backends/reference/dot_general.hpp"
#include "fluxion/lax.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/registry.hpp"

namespace fluxion::primitives {
namespace dot_general_family {

/// Params of dot_general, printed "contract=((1,),(0,)) batch=((),())".
struct DotGeneralParams final : ParamsOf<DotGeneralParams> {
  AxisPair contract, batch;
  DotGeneralParams(AxisPair c, AxisPair b) : contract(std::move(c)), batch(std::move(b)) {}
  auto fields() const { return std::tie(contract, batch); }
  static constexpr const char* names[] = {"contract", "batch"};
};

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
                             axes_str(pair.second), " of rhs ", r,
                             " differ in number. Give one rhs dim per lhs dim.");
  for (size_t i = 0; i < pair.first.size(); ++i) {
    const int64_t a = l.shape[pair.first[i]], b = r.shape[pair.second[i]];
    if (a != b)
      detail::fail<ShapeError>(self.name.c_str(), what, " dims ", axes_str(pair.first), " of lhs ", l, " and ",
                               axes_str(pair.second), " of rhs ", r, " have different sizes: lhs dim ",
                               pair.first[i], " is ", a, ", rhs dim ", pair.second[i], " is ", b,
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
    detail::fail<ShapeError>(self.name.c_str(), c ? "contracting" : "batch", " dims ", axes_str(pair.first),
                             " of lhs ", l, " and ", axes_str(pair.second), " of rhs ", r,
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
      else
        cpu::dot_general(l, in[0].shape().dims(), r, in[1].shape().dims(), p.contract, p.batch, o);
    }
  });
}

const Primitive& dot_general_p() {
  static const Primitive p = [] {
    Primitive q;
    q.name = "dot_general";
    q.traits.linear = true;  // bilinear: linear in each operand
    q.shape_rule = &dot_general_shape_rule;
    q.kernels[static_cast<size_t>(Backend::reference)] = &dot_general_kernel<true>;
    q.kernels[static_cast<size_t>(Backend::cpu)] = &dot_general_kernel<false>;
    return q;
  }();
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
