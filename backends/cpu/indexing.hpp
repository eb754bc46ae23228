/// CPU kernels of the indexing primitives (slice, dynamic slices, pad, concatenate, iota, gather,
/// scatter_add): box copies go through the strided copy engine. Inputs are validated.
#pragma once
#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "backends/cpu/small_vector.hpp"
#include "backends/cpu/strided_copy.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion::cpu::indexing_kernels {

inline const char* bytes(const Tensor& t) { return static_cast<const char*>(t.array("cpu kernel").data()); }
inline char* out_bytes(const Tensor& t) { return static_cast<char*>(t.array("cpu kernel").data()); }
/// Row-major element strides of t's shape, without a heap allocation.
inline IndexVector strides_of(const Tensor& t) { return strided::contiguous_strides(t.shape().dims()); }

/// Copies the box `box` at element offset `src_off` of src (strides `ss`) to offset `dst_off` of dst.
inline void copy_box(IndexSpan box, const Tensor& dst, int64_t dst_off, IndexSpan ds, const Tensor& src,
                     int64_t src_off, IndexSpan ss) {
  const int64_t es = dtype_size(src.dtype());
  for (int64_t b : box)
    if (b == 0) return;
  strided::copy(box, out_bytes(dst) + dst_off * es, ds, bytes(src) + src_off * es, ss, es);
}

/// A start index clamped so that a window of `size` fits in `dim` (XLA's dynamic slice rule).
inline int64_t clamped_start(const Tensor& start, int64_t dim, int64_t size) {
  const int64_t s = start.item<int64_t>();
  return std::min(std::max<int64_t>(s, 0), dim - size);
}

inline void slice(const Tensor& x, const std::vector<int64_t>& start, const std::vector<int64_t>& strides,
                  const Tensor& y) {
  const IndexVector xs = strides_of(x);
  IndexVector ss(xs.size());
  int64_t off = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    off += start[d] * xs[d];
    ss[d] = strides[d] * xs[d];
  }
  copy_box(y.shape().dims(), y, 0, strides_of(y), x, off, ss);
}

/// starts[d] is the rank-0 start tensor of dim d.
inline void dynamic_slice(const Tensor& x, const std::vector<Tensor>& starts, const Tensor& y) {
  const IndexVector xs = strides_of(x);
  int64_t off = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    const auto di = static_cast<int64_t>(d);
    off += clamped_start(starts[d], x.shape()[di], y.shape()[di]) * xs[d];
  }
  copy_box(y.shape().dims(), y, 0, strides_of(y), x, off, xs);
}

inline void dynamic_update_slice(const Tensor& x, const Tensor& update, const std::vector<Tensor>& starts,
                                 const Tensor& y) {
  const size_t nbytes = static_cast<size_t>(x.size() * dtype_size(x.dtype()));
  if (nbytes) std::memcpy(out_bytes(y), bytes(x), nbytes);
  const IndexVector ys = strides_of(y);
  int64_t off = 0;
  for (size_t d = 0; d < ys.size(); ++d) {
    const auto di = static_cast<int64_t>(d);
    off += clamped_start(starts[d], x.shape()[di], update.shape()[di]) * ys[d];
  }
  copy_box(update.shape().dims(), y, off, ys, update, 0, strides_of(update));
}

/// Fills y with the padding value, then writes the operand elements that survive cropping at
/// stride interior+1 in one box copy.
inline void pad(const Tensor& x, const Tensor& value, const std::vector<int64_t>& low, const std::vector<int64_t>& high,
                const std::vector<int64_t>& interior, const Tensor& y) {
  const int64_t es = dtype_size(x.dtype());
  bool covered = true;  // no padding element survives: every output element comes from x
  for (size_t d = 0; d < low.size(); ++d) covered = covered && low[d] <= 0 && high[d] <= 0 && interior[d] == 0;
  if (!covered && y.size() > 0) strided::fill(out_bytes(y), y.size(), bytes(value), es);
  const IndexVector xs = strides_of(x), ys = strides_of(y);
  IndexVector box(xs.size()), ss(xs), ds(ys.size());
  int64_t src_off = 0, dst_off = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    const auto di = static_cast<int64_t>(d);
    const int64_t n = x.shape()[di], out = y.shape()[di], step = interior[d] + 1;
    // Operand positions i land at low + i*step; keep those in [0, out).
    const int64_t first = low[d] >= 0 ? 0 : (-low[d] + step - 1) / step;
    const int64_t end = out - low[d] <= 0 ? 0 : std::min(n, (out - low[d] + step - 1) / step);
    box[d] = std::max<int64_t>(0, end - first);
    src_off += first * xs[d];
    dst_off += (low[d] + first * step) * ys[d];
    ds[d] = step * ys[d];
  }
  copy_box(box, y, dst_off, ds, x, src_off, ss);
}

inline void concatenate(const std::vector<Tensor>& xs, int64_t dimension, const Tensor& y) {
  const IndexVector ys = strides_of(y);
  int64_t at = 0;
  for (const Tensor& x : xs) {
    copy_box(x.shape().dims(), y, at * ys[static_cast<size_t>(dimension)], ys, x, 0, strides_of(x));
    at += x.shape()[dimension];
  }
}

inline void iota(int64_t dimension, const Tensor& y) {
  const Shape& s = y.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dimension; ++d) outer *= s[d];
  for (int64_t d = dimension + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t n = s[dimension];
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      T* p = y.mutable_data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < n; ++k) std::fill_n(p + (o * n + k) * inner, inner, static_cast<T>(k));
    }
  });
}

/// x viewed as [outer, n, inner] along `axis`; indices flattened to m entries, clamped to [0, n).
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
  AxisView(const Shape& s, int64_t axis) : n(s[axis]) {
    for (int64_t d = 0; d < axis; ++d) outer *= s[d];
    for (int64_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  }
};

/// The indices clamped to [0, n): indices.size() entries in the calling thread's scratch_buffer
/// (slot 0; `owned` when very large), so a jit'd gather allocates nothing per call.
inline const int64_t* clamped_indices(const Tensor& indices, int64_t n, std::unique_ptr<int64_t[]>& owned) {
  const size_t m = static_cast<size_t>(indices.size());
  int64_t* k = scratch_buffer<int64_t>(0, m, owned);
  dispatch_dtype(indices.dtype(), [&](auto tag) {
    using I = typename decltype(tag)::type;
    if constexpr (std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>) {
      const I* p = indices.data<I>();
      for (size_t j = 0; j < m; ++j) k[j] = std::min<int64_t>(std::max<int64_t>(p[j], 0), n - 1);
    }
  });
  return k;
}

template <int S> inline void gather_rows(char* y, const char* x, const int64_t* k, int64_t m, const AxisView& v) {
  const int64_t row = v.inner * S;
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t j = 0; j < m; ++j) {
      char* dst = y + (o * m + j) * row;
      const char* src = x + (o * v.n + k[j]) * row;
      if (v.inner == 1) std::memcpy(dst, src, S);
      else std::memcpy(dst, src, static_cast<size_t>(row));
    }
}

inline void gather(const Tensor& x, const Tensor& indices, int64_t axis, const Tensor& y) {
  if (y.size() == 0) return;
  const AxisView v(x.shape(), axis);
  std::unique_ptr<int64_t[]> owned;
  const int64_t* k = clamped_indices(indices, v.n, owned);
  const int64_t m = indices.size();
  switch (dtype_size(x.dtype())) {
    case 1: gather_rows<1>(out_bytes(y), bytes(x), k, m, v); break;
    case 4: gather_rows<4>(out_bytes(y), bytes(x), k, m, v); break;
    default: gather_rows<8>(out_bytes(y), bytes(x), k, m, v); break;
  }
}

/// a + b; integers wrap around instead of overflowing.
template <class T> T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

inline void scatter_add(const Tensor& operand, const Tensor& indices, const Tensor& updates, int64_t axis,
                        const Tensor& y) {
  const size_t nbytes = static_cast<size_t>(operand.size() * dtype_size(operand.dtype()));
  if (nbytes) std::memcpy(out_bytes(y), bytes(operand), nbytes);
  if (updates.size() == 0) return;
  const AxisView v(operand.shape(), axis);
  std::unique_ptr<int64_t[]> owned;
  const int64_t* k = clamped_indices(indices, v.n, owned);
  const int64_t m = indices.size();
  dispatch_dtype(operand.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      T* out = y.mutable_data<T>();
      const T* u = updates.data<T>();
      for (int64_t o = 0; o < v.outer; ++o)
        for (int64_t j = 0; j < m; ++j) {
          T* dst = out + (o * v.n + k[j]) * v.inner;
          const T* src = u + (o * m + j) * v.inner;
          for (int64_t i = 0; i < v.inner; ++i) dst[i] = wrapping_add(dst[i], src[i]);
        }
    }
  });
}

}  // namespace fluxion::cpu::indexing_kernels
