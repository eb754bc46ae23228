// Shape and movement primitives: broadcast_in_dim reshape transpose squeeze expand_dims. All are
// linear; reshape, squeeze and expand_dims are views (eager evaluation shares the operand's
// buffer), their kernels are plain copies kept for completeness. Params hold canonical
// (non-negative) axes: the lax wrappers normalise negative ones.
#include <algorithm>
#include <sstream>

#include "backends/cpu/shape.hpp"
#include "backends/reference/shape.hpp"
#include "fluxion/lax.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/registry.hpp"

namespace fluxion::primitives {
namespace shape_family {

using Axes = std::vector<int64_t>;

/// "(0,2)" — axis lists in messages, printed like the Jaxpr params.
std::string axes_str(const Axes& v) {
  std::ostringstream os;
  detail::print_param(os, v);
  return os.str();
}

struct BroadcastInDimParams final : ParamsOf<BroadcastInDimParams> {
  Shape shape;
  Axes broadcast_dimensions;
  BroadcastInDimParams(Shape s, Axes b) : shape(std::move(s)), broadcast_dimensions(std::move(b)) {}
  auto fields() const { return std::tie(shape, broadcast_dimensions); }
  static constexpr const char* names[] = {"shape", "broadcast_dimensions"};
};
struct ReshapeParams final : ParamsOf<ReshapeParams> {
  Shape new_sizes;
  explicit ReshapeParams(Shape s) : new_sizes(std::move(s)) {}
  auto fields() const { return std::tie(new_sizes); }
  static constexpr const char* names[] = {"new_sizes"};
};
struct TransposeParams final : ParamsOf<TransposeParams> {
  Axes permutation;
  explicit TransposeParams(Axes p) : permutation(std::move(p)) {}
  auto fields() const { return std::tie(permutation); }
  static constexpr const char* names[] = {"permutation"};
};
struct SqueezeParams final : ParamsOf<SqueezeParams> {
  Axes dimensions;
  explicit SqueezeParams(Axes d) : dimensions(std::move(d)) {}
  auto fields() const { return std::tie(dimensions); }
  static constexpr const char* names[] = {"dimensions"};
};
struct ExpandDimsParams final : ParamsOf<ExpandDimsParams> {
  Axes dimensions;
  explicit ExpandDimsParams(Axes d) : dimensions(std::move(d)) {}
  auto fields() const { return std::tie(dimensions); }
  static constexpr const char* names[] = {"dimensions"};
};

// ---- shape rules ----

std::vector<AbstractValue> broadcast_in_dim_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                                 const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<BroadcastInDimParams>();
  const char* nm = self.name.c_str();
  const AbstractValue& x = in[0];
  const Axes& bd = p.broadcast_dimensions;
  const int64_t out_rank = p.shape.size();
  checked_num_elements(nm, p.shape.dims());
  if (static_cast<int64_t>(bd.size()) != x.ndim())
    detail::fail<ShapeError>(nm, "broadcast_dimensions=", axes_str(bd), " has ", bd.size(),
                             " entries for operand ", x, " of rank ", x.ndim(),
                             ". Give one output dimension per operand dimension.");
  for (size_t i = 0; i < bd.size(); ++i) {
    if (bd[i] < 0 || bd[i] >= out_rank)
      detail::fail<AxisError>(nm, "broadcast_dimensions=", axes_str(bd), " names dimension ", bd[i],
                              ", out of range for the output shape ", p.shape, " of rank ", out_rank,
                              ". Use dimensions in [0, ", out_rank, ").");
    if (i > 0 && bd[i] <= bd[i - 1])
      detail::fail<AxisError>(nm, "broadcast_dimensions=", axes_str(bd),
                              " must be strictly increasing. Reorder the operand with lax::transpose first.");
    const int64_t have = x.shape[static_cast<int64_t>(i)], want = p.shape[bd[i]];
    if (have != 1 && have != want)
      detail::fail<ShapeError>(nm, "operand ", x, " dimension ", i, " has size ", have,
                               ", which cannot broadcast to size ", want, " (dimension ", bd[i],
                               " of the output shape ", p.shape, "). Sizes must be equal or 1.");
  }
  return {AbstractValue{p.shape, x.dtype}};
}

std::vector<AbstractValue> reshape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                        const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<ReshapeParams>();
  const char* nm = self.name.c_str();
  const int64_t want = checked_num_elements(nm, p.new_sizes.dims());
  const int64_t have = in[0].shape.num_elements();
  if (want != have)
    detail::fail<ShapeError>(nm, "cannot reshape ", in[0], " (", have, " elements) to new_sizes ",
                             p.new_sizes, " (", want, " elements). The element count must stay the same.");
  return {AbstractValue{p.new_sizes, in[0].dtype}};
}

std::vector<AbstractValue> transpose_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                          const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<TransposeParams>();
  const char* nm = self.name.c_str();
  const AbstractValue& x = in[0];
  const int64_t rank = x.ndim();
  const Axes& perm = p.permutation;
  std::vector<char> seen(static_cast<size_t>(rank), 0);
  bool ok = static_cast<int64_t>(perm.size()) == rank;
  for (size_t k = 0; ok && k < perm.size(); ++k) {
    ok = perm[k] >= 0 && perm[k] < rank && !seen[static_cast<size_t>(perm[k])];
    if (ok) seen[static_cast<size_t>(perm[k])] = 1;
  }
  if (!ok)
    detail::fail<AxisError>(nm, "permutation=", axes_str(perm), " is not a permutation of the ", rank,
                            " dimensions of operand ", x, ". List each of 0..", rank - 1, " exactly once.");
  Shape out;
  for (int64_t k : perm) out.push_back(x.shape[k]);
  return {AbstractValue{out, x.dtype}};
}

std::vector<AbstractValue> squeeze_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                        const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<SqueezeParams>();
  const char* nm = self.name.c_str();
  const AbstractValue& x = in[0];
  const int64_t rank = x.ndim();
  std::vector<char> drop(static_cast<size_t>(rank), 0);
  for (int64_t d : p.dimensions) {
    if (d < 0 || d >= rank)
      detail::fail<AxisError>(nm, "dimensions=", axes_str(p.dimensions), " names dimension ", d,
                              ", out of range for operand ", x, " of rank ", rank, ". Use dimensions in [0, ",
                              rank, ") (lax::squeeze also accepts negative ones).");
    if (drop[static_cast<size_t>(d)])
      detail::fail<AxisError>(nm, "dimensions=", axes_str(p.dimensions), " lists dimension ", d,
                              " twice. List each dimension once.");
    if (x.shape[d] != 1)
      detail::fail<ShapeError>(nm, "cannot squeeze dimension ", d, " of operand ", x, ": its size is ",
                               x.shape[d], ", not 1. Squeeze only size-1 dimensions (slice or reduce others).");
    drop[static_cast<size_t>(d)] = 1;
  }
  Shape out;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[static_cast<size_t>(d)]) out.push_back(x.shape[d]);
  return {AbstractValue{out, x.dtype}};
}

std::vector<AbstractValue> expand_dims_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                            const Params& params) {
  check_arity(self, in, 1);
  const auto& p = params.as<ExpandDimsParams>();
  const char* nm = self.name.c_str();
  const AbstractValue& x = in[0];
  const int64_t out_rank = x.ndim() + static_cast<int64_t>(p.dimensions.size());
  std::vector<char> added(static_cast<size_t>(out_rank), 0);
  for (int64_t d : p.dimensions) {
    if (d < 0 || d >= out_rank)
      detail::fail<AxisError>(nm, "dimensions=", axes_str(p.dimensions), " names output position ", d,
                              ", out of range for the rank-", out_rank, " result of expanding ", x,
                              ". Use positions in [0, ", out_rank, ").");
    if (added[static_cast<size_t>(d)])
      detail::fail<AxisError>(nm, "dimensions=", axes_str(p.dimensions), " lists position ", d,
                              " twice. List each new position once.");
    added[static_cast<size_t>(d)] = 1;
  }
  Shape out;
  int64_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) out.push_back(added[static_cast<size_t>(d)] ? 1 : x.shape[next++]);
  return {AbstractValue{out, x.dtype}};
}

// ---- kernels: unpack params, call the backend ----

void copy_cpu(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  cpu::shape_kernels::copy_flat(in[0], out[0]);
}
void copy_reference(const std::vector<Tensor>& in, const Params&, std::vector<Tensor>& out) {
  reference::shape_kernels::copy_flat(in[0], out[0]);
}
void broadcast_in_dim_cpu(const std::vector<Tensor>& in, const Params& p, std::vector<Tensor>& out) {
  cpu::shape_kernels::broadcast_in_dim(in[0], p.as<BroadcastInDimParams>().broadcast_dimensions, out[0]);
}
void broadcast_in_dim_reference(const std::vector<Tensor>& in, const Params& p, std::vector<Tensor>& out) {
  reference::shape_kernels::broadcast_in_dim(in[0], p.as<BroadcastInDimParams>().broadcast_dimensions, out[0]);
}
void transpose_cpu(const std::vector<Tensor>& in, const Params& p, std::vector<Tensor>& out) {
  cpu::shape_kernels::transpose(in[0], p.as<TransposeParams>().permutation, out[0]);
}
void transpose_reference(const std::vector<Tensor>& in, const Params& p, std::vector<Tensor>& out) {
  reference::shape_kernels::transpose(in[0], p.as<TransposeParams>().permutation, out[0]);
}

Primitive make_movement(const char* name, ShapeRule rule, Kernel cpu_kernel, Kernel reference_kernel, bool view) {
  Primitive p;
  p.name = name;
  p.traits.linear = true;
  p.traits.view = view;
  p.shape_rule = rule;
  p.kernels[static_cast<size_t>(Backend::cpu)] = cpu_kernel;
  p.kernels[static_cast<size_t>(Backend::reference)] = reference_kernel;
  return p;
}

const Primitive& broadcast_in_dim_p() {
  static const Primitive p = make_movement("broadcast_in_dim", &broadcast_in_dim_rule, &broadcast_in_dim_cpu,
                                           &broadcast_in_dim_reference, false);
  return p;
}
const Primitive& reshape_p() {
  static const Primitive p = make_movement("reshape", &reshape_rule, &copy_cpu, &copy_reference, true);
  return p;
}
const Primitive& transpose_p() {
  static const Primitive p = make_movement("transpose", &transpose_rule, &transpose_cpu, &transpose_reference, false);
  return p;
}
const Primitive& squeeze_p() {
  static const Primitive p = make_movement("squeeze", &squeeze_rule, &copy_cpu, &copy_reference, true);
  return p;
}
const Primitive& expand_dims_p() {
  static const Primitive p = make_movement("expand_dims", &expand_dims_rule, &copy_cpu, &copy_reference, true);
  return p;
}

/// Negative axes counted from the end of a rank-`rank` shape, sorted (AxisError naming `where`).
/// rank < 0 (an empty handle) leaves them for bind to reject.
Axes normalized_sorted(const char* where, const Axes& axes, int64_t rank) {
  if (rank < 0) return axes;
  Axes out;
  out.reserve(axes.size());
  for (int64_t a : axes) out.push_back(normalize_axis(where, a, rank));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace shape_family

void register_shape(std::vector<const Primitive*>& list) {
  using namespace shape_family;
  list.insert(list.end(), {&broadcast_in_dim_p(), &reshape_p(), &transpose_p(), &squeeze_p(), &expand_dims_p()});
}

}  // namespace fluxion::primitives

namespace fluxion::lax {

Tensor broadcast_in_dim(const Tensor& x, const Shape& shape, const std::vector<int64_t>& broadcast_dimensions) {
  namespace sf = primitives::shape_family;
  return bind1(sf::broadcast_in_dim_p(), {x}, sf::BroadcastInDimParams(shape, broadcast_dimensions));
}
Tensor reshape(const Tensor& x, const Shape& new_sizes) {
  namespace sf = primitives::shape_family;
  return bind1(sf::reshape_p(), {x}, sf::ReshapeParams(new_sizes));
}
Tensor transpose(const Tensor& x, const std::vector<int64_t>& permutation) {
  namespace sf = primitives::shape_family;
  return bind1(sf::transpose_p(), {x}, sf::TransposeParams(permutation));
}
Tensor squeeze(const Tensor& x, const std::vector<int64_t>& dimensions) {
  namespace sf = primitives::shape_family;
  return bind1(sf::squeeze_p(), {x}, sf::SqueezeParams(sf::normalized_sorted("squeeze", dimensions, x.defined() ? x.ndim() : -1)));
}
Tensor expand_dims(const Tensor& x, const std::vector<int64_t>& dimensions) {
  namespace sf = primitives::shape_family;
  const int64_t out_rank = x.defined() ? x.ndim() + static_cast<int64_t>(dimensions.size()) : -1;
  return bind1(sf::expand_dims_p(), {x},
               sf::ExpandDimsParams(sf::normalized_sorted("expand_dims", dimensions, out_rank)));
}

}  // namespace fluxion::lax
