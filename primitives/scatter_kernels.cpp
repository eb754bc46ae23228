// Reference and CPU kernels of the scatter family, both reading a WindowSpec (primitives/scatter.hpp).
// Reference (the executable spec): gather decodes every output element's multi-index into its
// index-batch position g and window offset; scatters walk g in row-major order and each window in
// row-major order, combining one update at a time. CPU: the same order of combines (so equal bit
// for bit), with the window's operand and side offsets tabulated once instead of decoded per element.
// Single-threaded: duplicate indices make parallel scatters racy, and gathers here are copies.
#include <cmath>
#include <type_traits>

#include "backends/reference/shape.hpp"
#include "primitives/scatter.hpp"

namespace fluxion::primitives::scatter_family {
namespace scatter_kernels_detail {

/// The value of v after combining update u (C++ scalar arithmetic; ties keep v; NaN wins min/max).
template <Combine C, class T> T combine(T v, T u) {
  if constexpr (C == Combine::replace) return u;
  else if constexpr (std::is_same_v<T, bool>) return v;  // unreachable: shape rules refuse bool
  else if constexpr (std::is_integral_v<T> && (C == Combine::add || C == Combine::mul)) {
    using U = std::make_unsigned_t<T>;  // integers wrap around (two's complement), never overflow UB
    const U a = static_cast<U>(v), b = static_cast<U>(u);
    return static_cast<T>(C == Combine::add ? static_cast<U>(a + b) : static_cast<U>(a * b));
  } else if constexpr (C == Combine::add) return v + u;
  else if constexpr (C == Combine::mul) return v * u;
  else if constexpr (C == Combine::min) return (u < v || u != u) ? u : v;
  else return (u > v || u != u) ? u : v;
}

/// Row-major strides of `shape`.
Ints strides_of(const Ints& shape) {
  Ints s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

/// The start of index-batch position g's window (see WindowSpec); false when it does not fit in
/// fill_or_drop mode. Clip mode clamps and always fits.
bool window_start(const WindowSpec& s, const std::vector<int64_t>& idx, int64_t g, Ints& start) {
  const size_t k = s.start_index_map.size();
  std::fill(start.begin(), start.end(), 0);
  for (size_t i = 0; i < k; ++i) start[static_cast<size_t>(s.start_index_map[i])] = idx[static_cast<size_t>(g) * k + i];
  Ints coord(s.index_batch_shape.size());
  for (size_t d = coord.size(), rest = static_cast<size_t>(g); d-- > 0;) {
    coord[d] = static_cast<int64_t>(rest) % s.index_batch_shape[d];
    rest /= static_cast<size_t>(s.index_batch_shape[d]);
  }
  for (size_t j = 0; j < s.operand_batching_dims.size(); ++j)
    start[static_cast<size_t>(s.operand_batching_dims[j])] = coord[static_cast<size_t>(s.indices_batching_dims[j])];
  for (size_t d = 0; d < start.size(); ++d) {
    const int64_t hi = s.operand_shape[d] - s.window[d];
    if (start[d] >= 0 && start[d] <= hi) continue;
    if (!s.clip) return false;
    start[d] = start[d] < 0 ? 0 : hi;
  }
  return true;
}

/// Side element `e` (row-major in side_shape) as (g, operand offset from the window start).
void decode_side(const WindowSpec& s, int64_t e, int64_t& g, Ints& offset) {
  const std::vector<int64_t> c = reference::layout::unravel(e, Shape(s.side_shape));
  std::fill(offset.begin(), offset.end(), 0);
  g = 0;
  size_t w = 0, b = 0;
  for (size_t d = 0; d < c.size(); ++d) {
    if (w < s.side_window_dims.size() && s.side_window_dims[w] == static_cast<int64_t>(d)) {
      offset[static_cast<size_t>(s.window_operand_dims[w++])] = c[d];
    } else {
      g = g * s.index_batch_shape[b++] + c[d];
    }
  }
}

/// Offsets of every window element (row-major over the window dims) in the operand and on the side.
struct WindowTables {
  Ints operand, side;
  Ints side_batch_stride;  // per index-batch dim, its stride on the side tensor
};
WindowTables window_tables(const WindowSpec& s) {
  const Ints os = strides_of(s.operand_shape), ss = strides_of(s.side_shape);
  Ints wshape;
  for (int64_t d : s.window_operand_dims) wshape.push_back(s.window[static_cast<size_t>(d)]);
  WindowTables t;
  reference::layout::for_each_index(Shape(wshape), [&](int64_t, const std::vector<int64_t>& c) {
    int64_t o = 0, sd = 0;
    for (size_t w = 0; w < c.size(); ++w) {
      o += c[w] * os[static_cast<size_t>(s.window_operand_dims[w])];
      sd += c[w] * ss[static_cast<size_t>(s.side_window_dims[w])];
    }
    t.operand.push_back(o);
    t.side.push_back(sd);
  });
  size_t w = 0;
  for (size_t d = 0; d < s.side_shape.size(); ++d) {
    if (w < s.side_window_dims.size() && s.side_window_dims[w] == static_cast<int64_t>(d)) ++w;
    else t.side_batch_stride.push_back(ss[d]);
  }
  return t;
}

/// The side offset of index-batch position g (its window's first element).
int64_t side_base(const WindowSpec& s, const WindowTables& t, int64_t g) {
  int64_t off = 0;
  for (size_t d = s.index_batch_shape.size(); d-- > 0;) {
    off += (g % s.index_batch_shape[d]) * t.side_batch_stride[d];
    g /= s.index_batch_shape[d];
  }
  return off;
}

int64_t dot(const Ints& a, const Ints& b) {
  int64_t r = 0;
  for (size_t i = 0; i < a.size(); ++i) r += a[i] * b[i];
  return r;
}

}  // namespace scatter_kernels_detail

namespace skd = scatter_kernels_detail;

template <bool Reference>
void gather_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<GatherParams>();
  const Tensor &x = in[0], &y = out[0];
  if (y.size() == 0) return;
  const WindowSpec s = gather_window_spec(x.shape(), in[1].shape(), p);
  const std::vector<int64_t> idx = in[1].to_vector<int64_t>();
  const Ints os = skd::strides_of(s.operand_shape);
  Ints start(s.operand_shape.size()), offset(s.operand_shape.size());
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = x.data<T>();
    T* b = y.mutable_data<T>();
    const T fill = static_cast<T>(p.fill_value);
    if constexpr (Reference) {
      for (int64_t e = 0; e < y.size(); ++e) {
        int64_t g = 0;
        skd::decode_side(s, e, g, offset);
        if (!skd::window_start(s, idx, g, start)) {
          b[e] = fill;
          continue;
        }
        for (size_t d = 0; d < start.size(); ++d) start[d] += offset[d];
        b[e] = a[skd::dot(start, os)];
      }
    } else {
      const skd::WindowTables t = skd::window_tables(s);
      for (int64_t g = 0, n = s.batch_count(); g < n; ++g) {
        T* dst = b + skd::side_base(s, t, g);
        if (!skd::window_start(s, idx, g, start)) {
          for (size_t w = 0; w < t.side.size(); ++w) dst[t.side[w]] = fill;
          continue;
        }
        const T* src = a + skd::dot(start, os);
        for (size_t w = 0; w < t.side.size(); ++w) dst[t.side[w]] = src[t.operand[w]];
      }
    }
  });
}

template <Combine C, bool Reference>
void scatter_kernel(const std::vector<Tensor>& in, const Params& params, std::vector<Tensor>& out) {
  const auto& p = params.as<ScatterParams>();
  const Tensor &x = in[0], &u = in[2], &y = out[0];
  const WindowSpec s = scatter_window_spec(x.shape(), in[1].shape(), u.shape(), p);
  const std::vector<int64_t> idx = in[1].to_vector<int64_t>();
  const Ints os = skd::strides_of(s.operand_shape);
  Ints start(s.operand_shape.size()), wshape;
  for (int64_t d : s.window_operand_dims) wshape.push_back(s.window[static_cast<size_t>(d)]);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* a = x.data<T>();
    const T* up = u.data<T>();
    T* b = y.mutable_data<T>();
    std::copy(a, a + x.size(), b);
    if (u.size() == 0) return;
    if constexpr (Reference) {
      // Update element of (g, window coordinate c): side index with c placed at the window dims.
      for (int64_t g = 0, n = s.batch_count(); g < n; ++g) {
        if (!skd::window_start(s, idx, g, start)) continue;
        const std::vector<int64_t> gc = reference::layout::unravel(g, Shape(s.index_batch_shape));
        reference::layout::for_each_index(Shape(wshape), [&](int64_t, const std::vector<int64_t>& c) {
          std::vector<int64_t> side(s.side_shape.size()), target = start;
          size_t w = 0, bi = 0;
          for (size_t d = 0; d < side.size(); ++d)
            side[d] = (w < c.size() && s.side_window_dims[w] == static_cast<int64_t>(d)) ? c[w++] : gc[bi++];
          for (size_t k = 0; k < c.size(); ++k) target[static_cast<size_t>(s.window_operand_dims[k])] += c[k];
          T& v = b[skd::dot(target, os)];
          v = skd::combine<C>(v, up[reference::layout::ravel(side, Shape(s.side_shape))]);
        });
      }
    } else {
      const skd::WindowTables t = skd::window_tables(s);
      for (int64_t g = 0, n = s.batch_count(); g < n; ++g) {
        if (!skd::window_start(s, idx, g, start)) continue;
        T* dst = b + skd::dot(start, os);
        const T* src = up + skd::side_base(s, t, g);
        for (size_t w = 0; w < t.side.size(); ++w)
          dst[t.operand[w]] = skd::combine<C>(dst[t.operand[w]], src[t.side[w]]);
      }
    }
  });
}

template void gather_kernel<true>(const std::vector<Tensor>&, const Params&, std::vector<Tensor>&);
template void gather_kernel<false>(const std::vector<Tensor>&, const Params&, std::vector<Tensor>&);
#define FLUXION_SCATTER_INSTANCES(c)                                                                      \
  template void scatter_kernel<c, true>(const std::vector<Tensor>&, const Params&, std::vector<Tensor>&); \
  template void scatter_kernel<c, false>(const std::vector<Tensor>&, const Params&, std::vector<Tensor>&);
FLUXION_SCATTER_INSTANCES(Combine::replace)
FLUXION_SCATTER_INSTANCES(Combine::add)
FLUXION_SCATTER_INSTANCES(Combine::mul)
FLUXION_SCATTER_INSTANCES(Combine::min)
FLUXION_SCATTER_INSTANCES(Combine::max)
#undef FLUXION_SCATTER_INSTANCES

}  // namespace fluxion::primitives::scatter_family
