// Non-template helpers of include/fluxion/transforms.hpp: argument checks and vmap plumbing.
#include "fluxion/transforms.hpp"

namespace fluxion::transform_detail {

void check_scalar_output(const char* transform, const std::vector<Tensor>& outs) {
  const Tensor& y = outs[0];
  if (y.ndim() != 0 || !is_floating(y.dtype()))
    detail::fail<ShapeError>(transform, "the function must return a floating-point scalar, it returned ",
                             y.aval(), ". Use jacrev, or sum the output.");
}

void check_float_input(const char* transform, size_t argnum, const Tensor& leaf) {
  if (!is_floating(leaf.dtype()))
    detail::fail<DTypeError>(transform, "argument ", argnum, " has dtype ", leaf.dtype(), " (", leaf.aval(),
                             "), but derivatives need floating-point inputs. Convert it with fx::astype(x, fx::f64).");
}

Tensor ones_like_value(const Tensor& t) { return ones(t.shape(), t.dtype()); }

int64_t vmap_batch_size(const std::vector<std::vector<Tensor>>& leaves_per_arg,
                        const std::vector<std::optional<int64_t>>& axes) {
  int64_t size = -1;
  size_t first_arg = 0;
  int64_t first_axis = 0;
  AbstractValue first_aval;
  for (size_t i = 0; i < leaves_per_arg.size(); ++i) {
    if (!axes[i] || leaves_per_arg[i].empty()) continue;
    for (const Tensor& t : leaves_per_arg[i]) {
      int64_t rank = t.ndim();
      int64_t a = *axes[i];
      if (a < -rank || a >= rank)
        detail::fail<AxisError>("vmap", "in_axes ", a, " is out of range for argument ", i, " of type ", t.aval(),
                                ". Use an axis in [", -rank, ", ", rank, ") or fx::none.");
      int64_t axis = a < 0 ? a + rank : a;
      int64_t n = t.shape()[axis];
      if (size < 0) {
        size = n, first_arg = i, first_axis = axis, first_aval = t.aval();
      } else if (n != size) {
        detail::fail<ShapeError>("vmap", "inconsistent sizes for the mapped axis: argument ", first_arg, " has ", size,
                                 " (axis ", first_axis, " of ", first_aval, "), argument ", i, " has ", n,
                                 " (axis ", axis, " of ", t.aval(), ").");
      }
    }
  }
  if (size < 0)
    detail::fail<Error>("vmap", "every in_axes entry is fx::none (or maps no tensor): there is nothing to map over. ",
                        "Map at least one argument.");
  return size;
}

Tensor vmap_output(const BatchInterpreter& interp, const Tensor& out, int64_t size, int64_t out_axis) {
  auto [value, dim] = interp.split(out);
  int64_t rank = value.ndim() + (dim == kNotMapped ? 1 : 0);
  if (out_axis < -rank || out_axis >= rank)
    detail::fail<AxisError>("vmap", "out_axes ", out_axis, " is out of range for an output of rank ", rank - 1,
                            " (", rank, " with the batch axis). Use an axis in [", -rank, ", ", rank, ").");
  int64_t to = out_axis < 0 ? out_axis + rank : out_axis;
  return batching::materialize(value, dim, size, to);
}

}  // namespace fluxion::transform_detail
