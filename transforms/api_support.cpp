// Non-template helpers of include/fluxion/transforms.hpp: argument checks and vmap plumbing.
#include "fluxion/transforms.hpp"

namespace fluxion::transform_detail {

void check_scalar_output(const char* transform, const std::vector<Tensor>& outs) {
  const Tensor& y = outs[0];
  if (y.ndim() != 0 || !is_floating(y.dtype()))
    detail::fail<ShapeError>(transform, "the function must return a floating-point scalar, it returned ", y.aval(),
                             ". Use jacrev, or sum the output.");
}

void check_float_input(const char* transform, size_t argnum, const Tensor& leaf) {
  if (!is_floating(leaf.dtype()))
    detail::fail<DTypeError>(transform, "argument ", argnum, " has dtype ", leaf.dtype(), " (", leaf.aval(),
                             "), but derivatives need floating-point inputs. Convert it with fx::astype(x, fx::f64).");
}

Tensor ones_like_value(const Tensor& t) { return ones(t.shape(), t.dtype()); }

void fail_argnums_range(const char* transform, int argnum, size_t num_args) {
  detail::fail<Error>(transform, "argnums ", argnum, " is out of range for a function called with ", num_args,
                      " argument(s). Use argnums in [0, ", num_args, ").");
}

void fail_axis_structure(const char* what, size_t index, const std::string& path, const std::string& problem) {
  detail::fail<Error>("vmap", what, " entry ",
                      what[0] == 'i' ? detail::cat("for argument ", index) : std::string("for the output"),
                      path.empty() ? "" : " at ", path, " ", problem, ". Give a container with one entry per element ",
                      "of the value's pytree, or one int / fx::none for the whole (sub)tree.");
}

int64_t vmap_batch_size(const std::vector<std::vector<Tensor>>& leaves_per_arg,
                        const std::vector<std::vector<std::optional<int64_t>>>& axes) {
  int64_t size = -1;
  size_t first_arg = 0;
  int64_t first_axis = 0;
  AbstractValue first_aval;
  for (size_t i = 0; i < leaves_per_arg.size(); ++i) {
    for (size_t j = 0; j < leaves_per_arg[i].size(); ++j) {
      if (!axes[i][j]) continue;
      const Tensor& t = leaves_per_arg[i][j];
      int64_t rank = t.ndim();
      int64_t a = *axes[i][j];
      if (a < -rank || a >= rank)
        detail::fail<AxisError>("vmap", "in_axes ", a, " is out of range for argument ", i, " of type ", t.aval(),
                                ". Use an axis in [", -rank, ", ", rank, ") or fx::none.");
      int64_t axis = a < 0 ? a + rank : a;
      int64_t n = t.shape()[axis];
      if (size < 0) {
        size = n, first_arg = i, first_axis = axis, first_aval = t.aval();
      } else if (n != size) {
        detail::fail<ShapeError>("vmap", "inconsistent sizes for the mapped axis: argument ", first_arg, " has ", size,
                                 " (axis ", first_axis, " of ", first_aval, "), argument ", i, " has ", n, " (axis ",
                                 axis, " of ", t.aval(), ").");
      }
    }
  }
  if (size < 0)
    detail::fail<Error>("vmap", "every in_axes entry is fx::none (or maps no tensor): there is nothing to map over. ",
                        "Map at least one argument.");
  return size;
}

Tensor vmap_output(const BatchInterpreter& interp, const Tensor& out, int64_t size, std::optional<int64_t> out_axis,
                   size_t leaf) {
  auto [value, dim] = interp.split(out);
  if (!out_axis) {
    if (dim != kNotMapped)
      detail::fail<Error>("vmap", "out_axes is fx::none for output leaf ", leaf, " (", value.aval(), "), but it ",
                          "depends on the mapped arguments. Give it a batch axis, or return it unbatched.");
    return value;
  }
  int64_t rank = value.ndim() + (dim == kNotMapped ? 1 : 0);
  if (*out_axis < -rank || *out_axis >= rank)
    detail::fail<AxisError>("vmap", "out_axes ", *out_axis, " is out of range for an output of rank ", rank - 1, " (",
                            rank, " with the batch axis). Use an axis in [", -rank, ", ", rank, ").");
  int64_t to = *out_axis < 0 ? *out_axis + rank : *out_axis;
  return batching::materialize(value, dim, size, to);
}

std::vector<int64_t> leaf_offsets(const std::vector<Tensor>& leaves) {
  std::vector<int64_t> off;
  int64_t total = 0;
  for (const Tensor& t : leaves) {
    off.push_back(total);
    total += t.size();
  }
  off.push_back(total);
  return off;
}

std::vector<Tensor> standard_basis(const std::vector<Tensor>& leaves) {
  std::vector<int64_t> off = leaf_offsets(leaves);
  int64_t total = off.back();
  std::vector<Tensor> basis;
  for (size_t i = 0; i < leaves.size(); ++i) {
    // Rows of the identity restricted to leaf i's columns, reshaped to [total, *shape].
    Tensor cols = lax::slice(eye(total, leaves[i].dtype()), {0, off[i]}, {total, off[i + 1]});
    std::vector<int64_t> shape{total};
    shape.insert(shape.end(), leaves[i].shape().begin(), leaves[i].shape().end());
    basis.push_back(lax::reshape(cols, Shape(shape)));
  }
  return basis;
}

Tensor jacobian_block(const Tensor& batched, int64_t offset, const Shape& basis_leaf, bool basis_is_input) {
  int64_t size = basis_leaf.num_elements();
  std::vector<int64_t> start(static_cast<size_t>(batched.ndim()), 0), limit = batched.shape().dims();
  start[0] = offset, limit[0] = offset + size;
  Tensor rows = lax::slice(batched, start, limit);  // [size, *other]
  std::vector<int64_t> other(batched.shape().begin() + 1, batched.shape().end());
  std::vector<int64_t> shape;
  if (basis_is_input) {
    // [size, *other] -> [*other, size] -> other ++ basis_leaf
    std::vector<int64_t> perm;
    for (int64_t i = 1; i < rows.ndim(); ++i) perm.push_back(i);
    perm.push_back(0);
    rows = lax::transpose(rows, perm);
    shape = other;
    shape.insert(shape.end(), basis_leaf.begin(), basis_leaf.end());
  } else {
    shape.assign(basis_leaf.begin(), basis_leaf.end());
    shape.insert(shape.end(), other.begin(), other.end());
  }
  return lax::reshape(rows, Shape(shape));
}

std::vector<std::vector<Tensor>> blocks_from_columns(const std::vector<Tensor>& ys,
                                                     const std::vector<Tensor>& x_leaves) {
  std::vector<int64_t> off = leaf_offsets(x_leaves);
  std::vector<std::vector<Tensor>> blocks(ys.size());
  for (size_t j = 0; j < ys.size(); ++j)
    for (size_t i = 0; i < x_leaves.size(); ++i)
      blocks[j].push_back(jacobian_block(ys[j], off[i], x_leaves[i].shape(), /*basis_is_input=*/true));
  return blocks;
}

std::vector<std::vector<Tensor>> blocks_from_rows(const std::vector<Tensor>& xs, const std::vector<Tensor>& y_leaves) {
  std::vector<int64_t> off = leaf_offsets(y_leaves);
  std::vector<std::vector<Tensor>> blocks(y_leaves.size());
  for (size_t j = 0; j < y_leaves.size(); ++j)
    for (size_t i = 0; i < xs.size(); ++i)
      blocks[j].push_back(jacobian_block(xs[i], off[j], y_leaves[j].shape(), /*basis_is_input=*/false));
  return blocks;
}

}  // namespace fluxion::transform_detail
