// sort: like lax.sort, every operand (equal shapes, any dtypes) reordered along one axis by the
// lexicographic order of the first num_keys operands; stable; descending keeps ties in their original
// order. Keys compare in XLA's total order for sorting (sort_less in sort.hpp): NaN last, -0.0 == 0.0.
// Kernels compute one permutation per row, then gather every operand through it: the CPU runs one
// std::stable_sort per key (the last key first, so the stable passes leave the rows in lexicographic
// order), rows in parallel, and sorts a lone operand's rows in place; the reference is a merge sort with the lexicographic comparison of all
// keys at once. argsort is sort(x, iota) and top_k a descending one, so they need no primitive.
// Rules: jvp permutes each tangent like its primal (sort again with an iota operand for the
// permutation, then a gather along the axis with it: the derivative is a permutation, linear, so
// vjp transposes that gather); batching moves the batch axis to the front. Nonlinear: no transpose.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <utility>

#include "backends/cpu/kernel_threads.hpp"
#include "fluxion/lax.hpp"
#include "fluxion/sort.hpp"
#include "primitives/builder.hpp"
#include "primitives/cumulative.hpp"
#include "primitives/elementwise.hpp"
#include "primitives/registry.hpp"
#include "primitives/sort.hpp"
#include "transforms/batching.hpp"

namespace fluxion::primitives {
namespace sort_detail {

SortRows sort_rows(const Shape& s, int64_t axis) {
  SortRows r{1, s[axis], 1};
  for (int64_t d = 0; d < axis; ++d) r.outer *= s[d];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(s.size()); ++d) r.inner *= s[d];
  return r;
}

/// Flat offset of element j of row r.
inline int64_t offset(const SortRows& rows, int64_t r, int64_t j) {
  return ((r / rows.inner) * rows.n + j) * rows.inner + r % rows.inner;
}

std::vector<AbstractValue> sort_shape_rule(const Primitive& self, const std::vector<AbstractValue>& in,
                                           const Params& params) {
  const auto& p = params.as<SortParams>();
  const char* name = self.name.c_str();
  if (in.empty())
    detail::fail<ShapeError>(name,
                             "needs at least one operand, got none. Pass the keys (and any operands "
                             "to reorder with them).");
  const int64_t count = static_cast<int64_t>(in.size());
  if (p.num_keys < 1 || p.num_keys > count)
    detail::fail<ShapeError>(name, "num_keys=", p.num_keys, " must be between 1 and the number of operands (", count,
                             "). The first num_keys operands are the keys.");
  for (int64_t i = 1; i < count; ++i)
    if (in[i].shape != in[0].shape)
      detail::fail<ShapeError>(name, "operand ", i, " ", in[i], " does not have the shape of operand 0 ", in[0],
                               ". Every operand is reordered like the keys, so shapes must be equal.");
  if (in[0].ndim() == 0)
    detail::fail<AxisError>(name, "cannot sort a rank-0 operand ", in[0],
                            ". Reshape it to one element (fx::reshape(x, {1})).");
  if (p.axis < 0 || p.axis >= in[0].ndim())
    detail::fail<AxisError>(name, "axis ", p.axis, " is out of range for operand ", in[0], " of rank ", in[0].ndim(),
                            ". Use an axis in [0, ", in[0].ndim(), ").");
  return in;
}

// ---- kernels ----

/// out[row, j] = in[row, perm[row, j]] for one operand.
void permute_rows(const Tensor& in, const std::vector<int64_t>& perm, const SortRows& rows, Tensor& out) {
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in.data<T>();
    T* y = out.mutable_data<T>();
    for (int64_t r = 0; r < rows.outer * rows.inner; ++r)
      for (int64_t j = 0; j < rows.n; ++j)
        y[offset(rows, r, j)] = x[offset(rows, r, perm[static_cast<size_t>(r * rows.n + j)])];
  });
}

/// CPU: per row, the positions stably sorted by each key from the last to the first (stable passes
/// compose to the lexicographic order); a pass sorts (key, position) pairs, contiguous whatever the
/// axis, and reads the new order back. Rows run in parallel when there is enough work.
void cpu_permutation(const std::vector<Tensor>& keys, const SortParams& p, const SortRows& rows,
                     std::vector<int64_t>& perm) {
  const int64_t num_rows = rows.outer * rows.inner, n = rows.n;
  const bool parallel = static_cast<double>(num_rows) * static_cast<double>(n) >= 1 << 15 && num_rows > 1;
  const int threads = parallel ? cpu::kernel_threads() : 1;
  cpu::parallel_for(num_rows, threads, 16, [&](int64_t r, int) {
    int64_t* row = perm.data() + r * n;
    std::iota(row, row + n, int64_t{0});
    for (size_t k = keys.size(); k-- > 0;)
      dispatch_dtype(keys[k].dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        using Pair = std::pair<T, int64_t>;
        const T* key = keys[k].data<T>() + offset(rows, r, 0);
        std::vector<Pair> pairs(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) pairs[static_cast<size_t>(j)] = {key[row[j] * rows.inner], row[j]};
        if (p.descending)
          std::stable_sort(pairs.begin(), pairs.end(),
                           [](const Pair& a, const Pair& b) { return sort_less(b.first, a.first); });
        else
          std::stable_sort(pairs.begin(), pairs.end(),
                           [](const Pair& a, const Pair& b) { return sort_less(a.first, b.first); });
        for (int64_t j = 0; j < n; ++j) row[j] = pairs[static_cast<size_t>(j)].second;
      });
  });
}

/// -1, 0 or 1: key `k`'s element a against element b (flat offsets), in sort_less's order.
int compare_at(const Tensor& key, int64_t a, int64_t b) {
  return dispatch_dtype(key.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = key.data<T>();
    return sort_less(x[a], x[b]) ? -1 : (sort_less(x[b], x[a]) ? 1 : 0);
  });
}

/// Reference: a top-down merge sort per row whose comparison walks all keys lexicographically
/// (taking the left run's element on ties keeps it stable).
void reference_permutation(const std::vector<Tensor>& keys, const SortParams& p, const SortRows& rows,
                           std::vector<int64_t>& perm) {
  const int64_t n = rows.n;
  std::vector<int64_t> scratch(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows.outer * rows.inner; ++r) {
    auto before = [&](int64_t a, int64_t b) {  // element a strictly before element b
      for (const Tensor& key : keys) {
        int c = compare_at(key, offset(rows, r, a), offset(rows, r, b));
        if (p.descending) c = -c;
        if (c != 0) return c < 0;
      }
      return false;
    };
    int64_t* row = perm.data() + r * n;
    std::iota(row, row + n, int64_t{0});
    std::function<void(int64_t, int64_t)> merge_sort = [&](int64_t lo, int64_t hi) {
      if (hi - lo < 2) return;
      const int64_t mid = lo + (hi - lo) / 2;
      merge_sort(lo, mid);
      merge_sort(mid, hi);
      int64_t i = lo, j = mid, o = 0;
      while (i < mid || j < hi)
        scratch[static_cast<size_t>(o++)] = (j >= hi || (i < mid && !before(row[j], row[i]))) ? row[i++] : row[j++];
      std::copy(scratch.begin(), scratch.begin() + o, row + lo);
    };
    merge_sort(0, n);
  }
}

/// CPU, one operand: each row copied out (contiguous), sorted in place, copied back: no permutation.
void cpu_sort_values(const Tensor& in, const SortParams& p, const SortRows& rows, Tensor& out) {
  const int64_t num_rows = rows.outer * rows.inner, n = rows.n;
  const bool parallel = static_cast<double>(num_rows) * static_cast<double>(n) >= 1 << 15 && num_rows > 1;
  const int threads = parallel ? cpu::kernel_threads() : 1;
  dispatch_dtype(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = in.data<T>();
    T* y = out.mutable_data<T>();
    cpu::parallel_for(num_rows, threads, 16, [&](int64_t r, int) {
      std::vector<T> row(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) row[static_cast<size_t>(j)] = x[offset(rows, r, j)];
      if (p.descending) std::stable_sort(row.begin(), row.end(), [](T a, T b) { return sort_less(b, a); });
      else std::stable_sort(row.begin(), row.end(), [](T a, T b) { return sort_less(a, b); });
      for (int64_t j = 0; j < n; ++j) y[offset(rows, r, j)] = row[static_cast<size_t>(j)];
    });
  });
}

template <bool Reference>
void sort_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<SortParams>();
  const SortRows rows = sort_rows(in[0].shape(), p.axis);
  if (!Reference && in.size() == 1) return cpu_sort_values(in[0], p, rows, out[0]);
  std::vector<int64_t> perm(static_cast<size_t>(rows.outer * rows.inner * rows.n));
  const std::vector<Tensor> keys(in.begin(), in.begin() + p.num_keys);
  if (Reference) reference_permutation(keys, p, rows, perm);
  else cpu_permutation(keys, p, rows, perm);
  for (size_t k = 0; k < in.size(); ++k) permute_rows(in[k], perm, rows, out[k]);
}

// ---- differentiation and batching rules ----

/// t reordered along `axis` by `perm` (t's shape, integer): out[..., j, ...] = t[..., perm[..., j, ...], ...].
/// One gather of the flattened t at flat offsets, so it is linear in t with scatter_add as transpose.
Tensor permute_along_axis(const Tensor& t, const Tensor& perm, int64_t axis) {
  const Shape& s = t.shape();
  int64_t stride = 1;
  for (int64_t d = axis + 1; d < t.ndim(); ++d) stride *= s[d];
  const Shape flat{s.num_elements()};
  // offset(perm) = offset(position) + (perm - position along axis) * stride.
  Tensor moved = lax::sub(lax::convert_element_type(perm, i64), lax::iota(i64, s, axis));
  Tensor offsets = lax::add(lax::reshape(lax::iota(i64, flat, 0), s), lax::mul(moved, full(Shape{}, stride, i64)));
  return lax::reshape(lax::gather(lax::reshape(t, flat), lax::reshape(offsets, flat), 0), s);
}

void sort_jvp(const Primitive& self, const std::vector<Tensor>& primals, const std::vector<Tensor>& tangents,
              const Params& params, std::vector<Tensor>& primals_out, std::vector<Tensor>& tangents_out) {
  const auto& p = params.as<SortParams>();
  tangents_out.assign(primals.size(), Tensor());
  bool any = false;
  for (size_t i = 0; i < primals.size(); ++i) any = any || (tangents[i].defined() && is_floating(primals[i].dtype()));
  if (!any) {
    primals_out = fluxion::bind(self, primals, params);
    return;
  }
  // The same sort with positions as an extra (non-key) operand gives the permutation.
  const Shape& s = primals[0].shape();
  std::vector<Tensor> with_positions = primals;
  with_positions.push_back(lax::iota(s[p.axis] <= INT32_MAX ? i32 : i64, s, p.axis));
  primals_out = fluxion::bind(self, with_positions, params);
  const Tensor perm = primals_out.back();
  primals_out.pop_back();
  for (size_t i = 0; i < primals.size(); ++i)
    if (tangents[i].defined() && is_floating(primals[i].dtype()))
      tangents_out[i] = permute_along_axis(tangents[i], perm, p.axis);
}

// Every operand batched at the front (unmapped ones broadcast: operands share one shape).
void sort_batch(const Primitive& self, const std::vector<Tensor>& values, const std::vector<int64_t>& dims,
                const Params& params, std::vector<Tensor>& out, std::vector<int64_t>& out_dims) {
  const auto& p = params.as<SortParams>();
  const int64_t size = batching::batch_size(values, dims);
  std::vector<Tensor> moved;
  for (size_t i = 0; i < values.size(); ++i) moved.push_back(batching::materialize(values[i], dims[i], size, 0));
  out = fluxion::bind(self, moved, SortParams(p.axis + 1, p.num_keys, p.descending));
  out_dims.assign(out.size(), 0);
}

}  // namespace sort_detail

const Primitive& sort_detail::sort_p() {
  static const Primitive& p = define_primitive("sort")
                                  .params<SortParams>()
                                  .shape(&sort_shape_rule)
                                  .reference(&sort_kernel<true>)
                                  .cpu(&sort_kernel<kLightKernels>)
                                  .jvp(&sort_jvp)
                                  .batch(&sort_batch)
                                  .build();
  return p;
}

void register_sort(std::vector<const Primitive*>& list) {
  namespace cd = cumulative_detail;
  list.insert(list.end(),
              {&sort_detail::sort_p(), &cd::cumprod_p(), &cd::cummax_p(), &cd::cummin_p(), &cd::cumlogsumexp_p()});
}

}  // namespace fluxion::primitives

namespace fluxion::lax {
std::vector<Tensor> sort(const std::vector<Tensor>& operands, int64_t dimension, int64_t num_keys, bool descending) {
  const int64_t rank = operands.empty() || !operands[0].defined() ? 0 : operands[0].ndim();
  const int64_t axis = dimension < 0 && rank > 0 ? dimension + rank : dimension;
  return fluxion::bind(primitives::sort_detail::sort_p(), operands,
                       primitives::sort_detail::SortParams(axis, num_keys, descending));
}
}  // namespace fluxion::lax
