/// General gather and scatter (JAX's dimension numbers), take/put_along_axis, segment reductions and
/// numpy-style integer-array indexing (issue 31).
///
/// Conventions, as jax.lax: the index vector dim of `indices` is its LAST dim (indices of shape
/// [..., K] hold one K-vector of start indices per position of the leading dims, the "index batch").
/// Out-of-range start indices follow a GatherScatterMode:
///   - clip: every start is clamped to [0, operand.shape[d] - window[d]], so the window fits;
///   - fill_or_drop: a gather window that does not fit entirely is filled with `fill_value`
///     (default: NaN for floats, the lowest value for integers, true for bool), and a scatter
///     window that does not fit is dropped whole.
/// The lax functions default to fill_or_drop (jax.lax's default); the numpy-style helpers default as
/// jax.numpy does: take, take_along_axis and index fill; put_along_axis and the segment reductions drop.
/// Negative indices are NOT normalized by lax functions (they are out of range); the numpy-style
/// helpers count them from the end like numpy.
///
/// Duplicate indices in scatters: updates are applied in the row-major order of their index-batch
/// position (the same order on every backend), so `scatter` keeps the LAST update, `scatter_mul`
/// multiplies in that order, and `scatter_min`/`scatter_max` are order-free (NaN propagates).
/// `scatter_add` sums in an unspecified order on CUDA (atomics), in index order elsewhere.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "fluxion/tensor.hpp"

namespace fluxion {

/// What gather/scatter do with start indices whose window does not fit (see the header comment).
enum class GatherScatterMode { clip, fill_or_drop };

/// How put_along_axis combines values with the array: replace (last duplicate wins) or add.
enum class PutMode { replace, add };

namespace lax {

/// jax.lax.GatherDimensionNumbers (index vector dim last). offset_dims: output dims holding the
/// slice, sorted; collapsed_slice_dims: operand dims of slice size 1 dropped from the output,
/// sorted; start_index_map: the operand dim each index-vector entry starts; operand_batching_dims /
/// start_indices_batching_dims: operand dims that pair one-to-one with index-batch dims (a batched
/// gather: example b of the operand is read by example b of the indices).
struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map, operand_batching_dims,
      start_indices_batching_dims;
};

/// jax.lax.ScatterDimensionNumbers (index vector dim last). update_window_dims: updates dims
/// holding the window, sorted; inserted_window_dims: operand dims of window size 1 absent from the
/// updates, sorted; scatter_dims_to_operand_dims: the operand dim each index-vector entry starts;
/// operand_batching_dims / scatter_indices_batching_dims: paired batch dims, as for gather.
struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims, operand_batching_dims,
      scatter_indices_batching_dims;
};

/// jax.lax.gather: output dims are the index-batch dims with the slice dims (offset_dims) inserted.
/// `fill_value` is used in fill_or_drop mode only (defaults above).
Tensor gather(const Tensor& operand, const Tensor& start_indices, const GatherDimensionNumbers& dimension_numbers,
              const std::vector<int64_t>& slice_sizes, GatherScatterMode mode = GatherScatterMode::fill_or_drop,
              std::optional<double> fill_value = std::nullopt);
/// jax.lax.scatter: operand with each update window written at its start (last duplicate wins).
Tensor scatter(const Tensor& operand, const Tensor& scatter_indices, const Tensor& updates,
               const ScatterDimensionNumbers& dimension_numbers,
               GatherScatterMode mode = GatherScatterMode::fill_or_drop);
/// jax.lax.scatter_add / scatter_mul / scatter_min / scatter_max: operand combined with every update.
Tensor scatter_add(const Tensor& operand, const Tensor& scatter_indices, const Tensor& updates,
                   const ScatterDimensionNumbers& dimension_numbers,
                   GatherScatterMode mode = GatherScatterMode::fill_or_drop);
Tensor scatter_mul(const Tensor& operand, const Tensor& scatter_indices, const Tensor& updates,
                   const ScatterDimensionNumbers& dimension_numbers,
                   GatherScatterMode mode = GatherScatterMode::fill_or_drop);
Tensor scatter_min(const Tensor& operand, const Tensor& scatter_indices, const Tensor& updates,
                   const ScatterDimensionNumbers& dimension_numbers,
                   GatherScatterMode mode = GatherScatterMode::fill_or_drop);
Tensor scatter_max(const Tensor& operand, const Tensor& scatter_indices, const Tensor& updates,
                   const ScatterDimensionNumbers& dimension_numbers,
                   GatherScatterMode mode = GatherScatterMode::fill_or_drop);

}  // namespace lax

/// numpy/jnp take with a mode: x.shape[:axis] ++ indices.shape ++ x.shape[axis+1:]. Negative
/// indices count from the end; what is still out of range follows `mode` (fill: NaN for floats).
/// (fx::take(x, indices, axis) without a mode clamps, as before.)
Tensor take(const Tensor& x, const Tensor& indices, int64_t axis, GatherScatterMode mode,
            std::optional<double> fill_value = std::nullopt);

/// numpy/jnp take_along_axis: out[..., j, ...] = x[..., indices[..., j, ...], ...] along `axis`.
/// indices has x's rank; its other dims broadcast against x's. Default mode fill, like jnp.
Tensor take_along_axis(const Tensor& x, const Tensor& indices, int64_t axis = -1,
                       GatherScatterMode mode = GatherScatterMode::fill_or_drop,
                       std::optional<double> fill_value = std::nullopt);

/// numpy put_along_axis, functional: x with values written (or added) at indices along `axis`.
/// indices has x's rank and broadcasts to x's shape off `axis`; values broadcast to indices'
/// shape. Out-of-range indices are dropped by default (jnp's .at[].set); clip clamps them.
Tensor put_along_axis(const Tensor& x, const Tensor& indices, const Tensor& values, int64_t axis,
                      PutMode how = PutMode::replace, GatherScatterMode mode = GatherScatterMode::fill_or_drop);

/// numpy integer-array indexing of the leading axes: x[i0, i1, ..., ik-1] with k <= x.ndim index
/// arrays that broadcast together to shape B; the result is B ++ x.shape[k:]. Negative indices count
/// from the end. (Slices mixed with arrays, x[:, i], are fx::take(x, i, axis); boolean masks are
/// fx::where / fx::nonzero.) Default mode fill, like jnp.take.
Tensor index(const Tensor& x, const std::vector<Tensor>& indices,
             GatherScatterMode mode = GatherScatterMode::fill_or_drop, std::optional<double> fill_value = std::nullopt);

/// jax.ops.segment_sum: out[s] = sum of data[i] over i with segment_ids[i] == s, for 1-d
/// segment_ids of length data.shape[0]; out has shape [num_segments] ++ data.shape[1:]. Ids outside
/// [0, num_segments) are dropped. The embedding-bag pattern: segment_sum(take(table, ids, 0), bag, n).
Tensor segment_sum(const Tensor& data, const Tensor& segment_ids, int64_t num_segments);
/// segment_max / segment_min: empty segments hold the identity (-inf / +inf for floats, the lowest /
/// highest value for integers), like jax.ops. segment_prod: empty segments hold 1.
Tensor segment_max(const Tensor& data, const Tensor& segment_ids, int64_t num_segments);
Tensor segment_min(const Tensor& data, const Tensor& segment_ids, int64_t num_segments);
Tensor segment_prod(const Tensor& data, const Tensor& segment_ids, int64_t num_segments);

}  // namespace fluxion
