/// The scatter family's CUDA kernels (gather_general and the five scatters), as device bodies over
/// a WindowMap: the WindowSpec of primitives/scatter.hpp in fixed-size arrays the device can read.
/// - gather_general: one body per output element (its index-batch position and window offset
///   decoded, the start read from the indices, clamped or filled as the mode says).
/// - scatter_add_general: one body per update element, fx_atomic_add into the output (duplicates
///   add up in any order: floats may differ from the reference in the last bits).
/// - scatter, scatter_mul, scatter_min, scatter_max: one body per OPERAND element, scanning the
///   index-batch positions g in ascending order and combining every update that lands on it: the
///   combines happen in the reference's order, so results equal it bit for bit, with no atomics
///   and no races (the cost is operand size x index count; fine for the embedding-sized scatters
///   these serve, a sort-based kernel is the next step for large ones).
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "backends/cuda/exec.hpp"
#include "backends/cuda/kernels/common.hpp"
#include "backends/cuda/kernels/indexing_copy.hpp"
#include "fluxion/tensor.hpp"
#include "primitives/scatter.hpp"

namespace fluxion::cuda {

/// WindowSpec (primitives/scatter.hpp) for the device; dims beyond kMaxKernelRank are refused.
struct WindowMap {
  int rank = 0, side_rank = 0, batch_rank = 0, k = 0, n_batching = 0;
  bool clip = true;
  fx_index operand_shape[kMaxKernelRank] = {}, operand_stride[kMaxKernelRank] = {}, window[kMaxKernelRank] = {};
  fx_index side_shape[kMaxKernelRank] = {}, side_stride[kMaxKernelRank] = {};
  int side_operand_dim[kMaxKernelRank] = {};  // the operand dim a side window dim walks, or -1 (index batch)
  int side_of_window[kMaxKernelRank] = {};    // per operand dim: its side window dim, or -1
  fx_index batch_shape[kMaxKernelRank] = {}, batch_side_stride[kMaxKernelRank] = {};
  int start_index_map[kMaxKernelRank] = {}, operand_batching[kMaxKernelRank] = {},
      indices_batching[kMaxKernelRank] = {};
  fx_index batch_count = 1;

  /// The window start of index-batch position g in `start`; false when it does not fit (fill/drop).
  template <class I> FLUXION_HD bool start_of(const I* idx, fx_index g, fx_index* start) const {
    for (int d = 0; d < rank; ++d) start[d] = 0;
    for (int i = 0; i < k; ++i) start[start_index_map[i]] = static_cast<fx_index>(idx[g * k + i]);
    fx_index coord[kMaxKernelRank] = {};
    for (int d = batch_rank - 1; d >= 0; --d) {
      coord[d] = g % batch_shape[d];
      g /= batch_shape[d];
    }
    for (int j = 0; j < n_batching; ++j) start[operand_batching[j]] = coord[indices_batching[j]];
    for (int d = 0; d < rank; ++d) {
      const fx_index hi = operand_shape[d] - window[d];
      if (start[d] >= 0 && start[d] <= hi) continue;
      if (!clip) return false;
      start[d] = start[d] < 0 ? 0 : hi;
    }
    return true;
  }

  /// Side element e as its index-batch position g and its offset in the window (per operand dim).
  FLUXION_HD void decode_side(fx_index e, fx_index& g, fx_index* offset) const {
    for (int d = 0; d < rank; ++d) offset[d] = 0;
    fx_index c[kMaxKernelRank] = {};
    for (int d = side_rank - 1; d >= 0; --d) {
      c[d] = e % side_shape[d];
      e /= side_shape[d];
    }
    g = 0;
    int b = 0;
    for (int d = 0; d < side_rank; ++d) {
      if (side_operand_dim[d] >= 0) offset[side_operand_dim[d]] = c[d];
      else g = g * batch_shape[b++] + c[d];
    }
  }
};

/// out = combine(v, u) with the reference's semantics (ties keep v; NaN wins min/max; ints wrap).
template <primitives::scatter_family::Combine C, class T> FLUXION_HD T scatter_combine(T v, T u) {
  using primitives::scatter_family::Combine;
  if constexpr (C == Combine::replace) return u;
  else if constexpr (std::is_same_v<T, bool>) return v;
  else if constexpr (std::is_integral_v<T> && (C == Combine::add || C == Combine::mul)) {
    using U = std::make_unsigned_t<T>;
    const U a = static_cast<U>(v), b = static_cast<U>(u);
    return static_cast<T>(C == Combine::add ? static_cast<U>(a + b) : static_cast<U>(a * b));
  } else if constexpr (C == Combine::add) return v + u;
  else if constexpr (C == Combine::mul) return v * u;
  else if constexpr (C == Combine::min) return (u < v || u != u) ? u : v;
  else return (u > v || u != u) ? u : v;
}

/// out[e] = operand[start + offset] for gathered element e, or the fill value.
template <class T, class I> struct GeneralGatherBody {
  const T* x;
  const I* idx;
  T* out;
  T fill;
  WindowMap map;
  FLUXION_HD void operator()(fx_index e) const {
    fx_index g = 0, offset[kMaxKernelRank], start[kMaxKernelRank];
    map.decode_side(e, g, offset);
    if (!map.start_of(idx, g, start)) {
      out[e] = fill;
      return;
    }
    fx_index at = 0;
    for (int d = 0; d < map.rank; ++d) at += (start[d] + offset[d]) * map.operand_stride[d];
    out[e] = x[at];
  }
};

/// out[target(e)] += updates[e] atomically, for every update element e that lands.
template <class T, class I> struct GeneralScatterAddBody {
  const T* updates;
  const I* idx;
  T* out;
  WindowMap map;
  FLUXION_HD void operator()(fx_index e) const {
    fx_index g = 0, offset[kMaxKernelRank], start[kMaxKernelRank];
    map.decode_side(e, g, offset);
    if (!map.start_of(idx, g, start)) return;
    fx_index at = 0;
    for (int d = 0; d < map.rank; ++d) at += (start[d] + offset[d]) * map.operand_stride[d];
    fx_atomic_add(out + at, updates[e]);
  }
};

/// out[o] = operand[o] combined with every update landing on o, in ascending g (the reference's order).
template <primitives::scatter_family::Combine C, class T, class I> struct ScatterScanBody {
  const T* x;
  const T* updates;
  const I* idx;
  T* out;
  WindowMap map;
  FLUXION_HD void operator()(fx_index o) const {
    fx_index c[kMaxKernelRank], start[kMaxKernelRank];
    for (int d = 0; d < map.rank; ++d) c[d] = (o / map.operand_stride[d]) % map.operand_shape[d];
    T v = x[o];
    for (fx_index g = 0; g < map.batch_count; ++g) {
      if (!map.start_of(idx, g, start)) continue;
      bool inside = true;
      fx_index side = 0;
      for (int d = 0; d < map.rank && inside; ++d) {
        const fx_index off = c[d] - start[d];
        inside = off >= 0 && off < map.window[d];
        if (map.side_of_window[d] >= 0) side += off * map.side_stride[map.side_of_window[d]];
      }
      if (!inside) continue;
      fx_index rest = g;
      for (int b = map.batch_rank - 1; b >= 0; --b) {
        side += (rest % map.batch_shape[b]) * map.batch_side_stride[b];
        rest /= map.batch_shape[b];
      }
      v = scatter_combine<C>(v, updates[side]);
    }
    out[o] = v;
  }
};

namespace scatter_detail {

inline void check_rank(const char* op, size_t n) {
  if (n > static_cast<size_t>(kMaxKernelRank))
    detail::fail<NotImplementedError>(op, "the CUDA kernels handle at most ", kMaxKernelRank,
                                      " dims per tensor (and index vector), got ", n, ". Reshape to fewer dims first.");
}

inline WindowMap window_map(const char* op, const primitives::scatter_family::WindowSpec& s) {
  for (size_t n : {s.operand_shape.size(), s.side_shape.size(), s.start_index_map.size()}) check_rank(op, n);
  WindowMap m;
  m.rank = static_cast<int>(s.operand_shape.size());
  m.side_rank = static_cast<int>(s.side_shape.size());
  m.batch_rank = static_cast<int>(s.index_batch_shape.size());
  m.k = static_cast<int>(s.start_index_map.size());
  m.n_batching = static_cast<int>(s.operand_batching_dims.size());
  m.clip = s.clip;
  m.batch_count = s.batch_count();
  const std::vector<int64_t> os = row_major_strides(s.operand_shape), ss = row_major_strides(s.side_shape);
  for (int d = 0; d < m.rank; ++d) {
    m.operand_shape[d] = s.operand_shape[static_cast<size_t>(d)];
    m.operand_stride[d] = os[static_cast<size_t>(d)];
    m.window[d] = s.window[static_cast<size_t>(d)];
    m.side_of_window[d] = -1;
  }
  size_t w = 0;
  int b = 0;
  for (int d = 0; d < m.side_rank; ++d) {
    m.side_shape[d] = s.side_shape[static_cast<size_t>(d)];
    m.side_stride[d] = ss[static_cast<size_t>(d)];
    if (w < s.side_window_dims.size() && s.side_window_dims[w] == d) {
      const int od = static_cast<int>(s.window_operand_dims[w++]);
      m.side_operand_dim[d] = od;
      m.side_of_window[od] = d;
    } else {
      m.side_operand_dim[d] = -1;
      m.batch_shape[b] = s.side_shape[static_cast<size_t>(d)];
      m.batch_side_stride[b++] = ss[static_cast<size_t>(d)];
    }
  }
  for (int i = 0; i < m.k; ++i) m.start_index_map[i] = static_cast<int>(s.start_index_map[static_cast<size_t>(i)]);
  for (int j = 0; j < m.n_batching; ++j) {
    m.operand_batching[j] = static_cast<int>(s.operand_batching_dims[static_cast<size_t>(j)]);
    m.indices_batching[j] = static_cast<int>(s.indices_batching_dims[static_cast<size_t>(j)]);
  }
  return m;
}

/// Calls f(TypeTag<I>{}) for the C++ type of the i32/i64 indices.
template <class F> void dispatch_index(DType d, F&& f) {
  if (d == i32) f(TypeTag<int32_t>{});
  else f(TypeTag<int64_t>{});
}

}  // namespace scatter_detail

template <class Exec>
void general_gather_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  namespace sf = primitives::scatter_family;
  const Tensor &x = in[0], &indices = in[1], &y = out[0];
  if (y.size() == 0) return;
  const auto& p = params.as<sf::GatherParams>();
  const WindowMap map =
      scatter_detail::window_map("gather_general", sf::gather_window_spec(x.shape(), indices.shape(), p));
  scatter_detail::dispatch_index(indices.dtype(), [&](auto itag) {
    using I = typename decltype(itag)::type;
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      Exec::for_each(y.size(), GeneralGatherBody<T, I>{x.data<T>(), indices.data<I>(), y.mutable_data<T>(),
                                                       static_cast<T>(p.fill_value), map});
    });
  });
}

template <class Exec, primitives::scatter_family::Combine C>
void general_scatter_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  namespace sf = primitives::scatter_family;
  const Tensor &x = in[0], &indices = in[1], &updates = in[2], &y = out[0];
  if (y.size() == 0) return;
  const auto& p = params.as<sf::ScatterParams>();
  const WindowMap map =
      scatter_detail::window_map("scatter", sf::scatter_window_spec(x.shape(), indices.shape(), updates.shape(), p));
  if (C == sf::Combine::add) indexing_detail::copy_flat<Exec>("scatter_add_general", x, y);
  if (C == sf::Combine::add && updates.size() == 0) return;
  scatter_detail::dispatch_index(indices.dtype(), [&](auto itag) {
    using I = typename decltype(itag)::type;
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (C == sf::Combine::add)
        Exec::for_each(updates.size(),
                       GeneralScatterAddBody<T, I>{updates.data<T>(), indices.data<I>(), y.mutable_data<T>(), map});
      else
        Exec::for_each(y.size(), ScatterScanBody<C, T, I>{x.data<T>(), updates.data<T>(), indices.data<I>(),
                                                          y.mutable_data<T>(), map});
    });
  });
}

/// Files this family's kernels under Exec::backend.
template <class Exec> void install_scatter_kernels() {
  namespace sf = primitives::scatter_family;
  using sf::Combine;
  const Backend b = Exec::backend;
  runtime::set_kernel(sf::gather_general_p(), b, &general_gather_kernel<Exec>);
  runtime::set_kernel(sf::scatter_p(), b, &general_scatter_kernel<Exec, Combine::replace>);
  runtime::set_kernel(sf::scatter_add_general_p(), b, &general_scatter_kernel<Exec, Combine::add>);
  runtime::set_kernel(sf::scatter_mul_p(), b, &general_scatter_kernel<Exec, Combine::mul>);
  runtime::set_kernel(sf::scatter_min_p(), b, &general_scatter_kernel<Exec, Combine::min>);
  runtime::set_kernel(sf::scatter_max_p(), b, &general_scatter_kernel<Exec, Combine::max>);
}

}  // namespace fluxion::cuda
