/// The CPU product paths as one table: choose_product(m, n, k, dtype, threads, layout) says which
/// kernel computes a product and on how many threads, reading every threshold from one
/// ProductThresholds. The kernels (gemm_*.hpp) only run what it chose.
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <climits>
#include <cstdint>

#include "backends/cpu/kernel_threads.hpp"
#include "fluxion/dtype.hpp"
#include "runtime/switches.hpp"

namespace fluxion::cpu {

/// Whether OpenBLAS is linked and its kernels suit this CPU (src/threads.cpp).
bool blas_usable();

/// How a product is computed. "op(a)" is a or aᵀ as the layout says; m x n results, k contracted.
enum class ProductPath : uint8_t {
  none,            // choose_register_product only: no register kernel takes the product
  tiny,            // plain loops straight over the operands' shapes (no layout planning)
  planned,         // source dot_general, not tiny: plan the operand layouts, then ask as `matrices`
  dot,             // m = n = 1: one dot product
  outer,           // k = 1: an outer product (no packing)
  gemv,            // m or n = 1: Eigen's matrix-vector product on the calling thread
  blas_gemv,       // the same through OpenBLAS
  split_gemv,      // slices of the result vector over `threads` threads, each by choose_gemv_slice
  thin_fixed,      // n and k of 2..4: op(b) in registers, one pass over op(a)'s rows
  short_fixed,     // m and n of 2..4: m n accumulators in registers over a long contraction
  thin_register,   // n, k <= register_cols: op(b) padded into a register tile
  short_register,  // m, n <= register_cols, b not transposed: a long contraction, b read in place
  lazy,            // m, n <= 4 (integers): Eigen's coefficient-based product
  stacked_gemv,    // 2..4 columns of op(b) against a tall a (not transposed), read once by rows
  dnnl,            // oneDNN's sgemm (on `threads` threads: slices over the pool)
  blas,            // OpenBLAS on the calling thread
  split_panels,    // slices of the result over the thread pool, each by panel_product
  split_eigen,     // slices of the result over the thread pool, each by Eigen's product on one thread
  panel,           // panel_product on the calling thread (f64: op(b)'s panels in L1, op(a) in place)
  eigen,           // Eigen's blocked product (on `threads` threads: slices over the pool)
};

/// The name of `p` ("split_panels"), for messages and tests.
inline const char* product_path_name(ProductPath p) {
  static constexpr const char* names[] = {
      "none",       "tiny",       "planned",      "dot",           "outer",          "gemv", "blas_gemv",
      "split_gemv", "thin_fixed", "short_fixed",  "thin_register", "short_register", "lazy", "stacked_gemv",
      "dnnl",       "blas",       "split_panels", "split_eigen",   "panel",          "eigen"};
  return names[static_cast<size_t>(p)];
}

/// Where a product comes from, which decides the paths open to it.
enum class ProductSource : uint8_t {
  dot_general,  // a whole dot_general, from its shapes alone: `tiny` or `planned`
  matrices,     // the `batch` products of contiguous row-major matrices of a planned dot_general
  strided,      // one product of matrices with leading dims (gram's block rows): the large paths
  tile,         // one rectangle of a tiled product, computed on the calling thread
};

/// What a product is beyond its sizes.
struct ProductLayout {
  ProductSource source = ProductSource::matrices;
  bool trans_a = false, trans_b = false;  // op(a) = aᵀ, op(b) = bᵀ as stored (row-major)
  int64_t batch = 1;                      // matrices: products of m x n x k in the call
  // dot_general only (the tiny rule): batch dims present (even of extent 1), the operands'
  // largest rank and largest dim.
  bool batch_dims = false;
  int64_t max_rank = 0, max_dim = 0;
};

/// Every threshold of the choice, with what decided it (measured on the development machine:
/// Emerald Rapids, AVX-512, 2 cores; measured: bench/RESULTS.md).
struct ProductThresholds {
  /// Tiny: no batch dims, ranks <= 2, every dim <= tiny_dim and m n k <= tiny_work multiply-adds.
  /// Planning the layouts and entering Eigen's kernels cost more than such a product; above about
  /// 256 multiply-adds Eigen's vectorised kernels win (an 8x8 matmul costs the same both ways, a
  /// 16x16 one 6x more in plain loops).
  int64_t tiny_dim = 16;
  int64_t tiny_work = 256;
  /// Multiply-adds from which a product is large: it takes every kernel thread (kLargeWork; below,
  /// starting the team costs more than it saves).
  double large_work = kLargeWork;
  /// Matrix elements from which a matrix-vector product is split over the threads: both libraries'
  /// GEMVs run on one thread here, and a GEMV is bound by reading the matrix, so each thread
  /// reading its own part nearly halves the time on 2 cores (1000 x 1000 f64)...
  double parallel_gemv = 1 << 17;
  /// ...in slices of at least this many results (slices start on 64-byte lines of f32).
  int64_t gemv_slice = 16;
  /// Matrix elements from which a matrix-vector product on one thread goes to OpenBLAS (equal to
  /// Eigen's below).
  double blas_gemv = 1 << 18;
  /// The register kernels' widest op(b) (two packets, at most 16): a capacity of their tiles, not
  /// a knob (a larger value would overflow them). 1000x10x10 f64: 10 µs against 20 for Eigen's
  /// blocked product, which packs both operands.
  int64_t register_cols_f32 = std::min(16, 2 * Eigen::internal::packet_traits<float>::size);
  int64_t register_cols_f64 = std::min(16, 2 * Eigen::internal::packet_traits<double>::size);
  /// The fixed-size kernels (thin_fixed, short_fixed, lazy, stacked_gemv) take sizes 2..small_dim
  /// (a capacity too: they are instantiated up to 4). 1000x2x2 f64: 0.7 µs against Eigen's 7.7.
  int64_t small_dim = 4;
  /// Multiply-adds from which an f32 product goes to oneDNN's sgemm: its AVX-512 kernels were
  /// 1.1-1.6x Eigen's speed from 48^3 up, on one and two threads; at 32^3 its call cost more than
  /// Eigen's whole product.
  double dnnl_work = 1 << 16;
  /// A large product on one thread goes to OpenBLAS (tiles too, large or not) when min(m, n) is
  /// above this: for skinnier ones (32 x 784 x 512, 512 x 512 x 32) Eigen was 5-25 % faster,
  /// while OpenBLAS is 10-25 % faster on large square ones.
  int64_t eigen_skinny = 32;
  /// A large f64 product on several threads runs one slice per thread when min(m, n) is at most
  /// this or k at most panel_max_k, instead of Eigen's parallel product, which shares packed
  /// blocks and spin-waits for them. Two threads: 1000x800x32 1.00 -> 0.67 ms, 1000x3200x64 10.1
  /// -> 5.2 ms, 32x800x1000 (aᵀ b) 1.05 -> 0.76 ms, 3200x64x1000 8.2 -> 7.4 ms; 1000^3 went the
  /// other way (19.6 -> 23.1 ms). (Measured with OpenMP; Eigen's parallel product is no longer
  /// used: `eigen` on several threads runs slices over the pool too, each by Eigen on one thread.)
  int64_t split_skinny = 64;
  /// Contractions up to which f64 products (slices, tiles) use the register panels: on tiles of
  /// 250 x 320 and 143 x 915 they took 0.66-0.83x Eigen's time for k of 8 to 32, 0.94-0.97x at 64
  /// and 128 (before Eigen's zero fill of the result); from 256 the two were equal or Eigen faster.
  int64_t panel_max_k = 128;
  /// An f64 product on one thread uses the panels when n is at most this and k is short or m is at
  /// most this too: one or two panels, so op(a) is read once or twice. Elsewhere by shape the
  /// panels took 0.6-1.6x Eigen's time (100000 x 32 x 32: 0.58x; 2000 x 2000 x 16: 1.56x), and
  /// Eigen spent about as long packing both operands of 1000 x 32 x 32 as in its kernel.
  int64_t panel_narrow = 64;

  constexpr int64_t register_cols(DType d) const { return d == DType::f32 ? register_cols_f32 : register_cols_f64; }
};

/// The thresholds the kernels run by.
inline constexpr ProductThresholds kProductThresholds{};

/// What this build and the optimization switches allow.
struct ProductOptions {
  bool dnnl = false;  // oneDNN's sgemm linked (FLUXION_DNNL), switch `blas` on
  bool blas = false;  // OpenBLAS linked and usable here (blas_usable), switch `blas` on
};

inline ProductOptions product_options() {
  ProductOptions o;
  const bool libraries = runtime::enabled(runtime::Switch::blas);
#if FLUXION_WITH_DNNL
  o.dnnl = libraries;
#endif
#if FLUXION_WITH_BLAS
  o.blas = libraries && blas_usable();
#endif
  return o;
}

/// The options choose_product reads: `given`, or else product_options() on first need only
/// (reading the switches costs as much as a tiny product, and most small paths never need them).
class OptionsOnDemand {
 public:
  explicit OptionsOnDemand(const ProductOptions* given) : given_(given) {}
  OptionsOnDemand(const OptionsOnDemand&) = delete;
  OptionsOnDemand& operator=(const OptionsOnDemand&) = delete;
  const ProductOptions& operator()() {
    if (!given_) read_ = product_options(), given_ = &read_;
    return *given_;
  }

 private:
  const ProductOptions* given_;
  ProductOptions read_;
};

/// The answer: the path, the threads it runs on, and for batches the threads they are shared over.
struct ProductChoice {
  ProductPath path = ProductPath::eigen;
  int threads = 1;        // threads of one product (1: the calling thread)
  int batch_threads = 1;  // > 1: the batches are shared out over these, each on one thread
};

/// One slice of a split_gemv (or a whole matrix-vector product on one thread) of `elements`
/// matrix elements: blas_gemv or gemv.
inline ProductPath choose_gemv_slice(double elements, DType dtype, const ProductThresholds& t = kProductThresholds,
                                     const ProductOptions* options = nullptr) {
  const bool floating = dtype == DType::f32 || dtype == DType::f64;
  OptionsOnDemand o(options);
  return floating && elements >= t.blas_gemv && o().blas ? ProductPath::blas_gemv : ProductPath::gemv;
}

namespace choice_detail {

inline bool floating(DType d) { return d == DType::f32 || d == DType::f64; }
inline double work(int64_t m, int64_t n, int64_t k) {
  return static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

/// The large paths, shared by strided products and the matrices of a dot_general.
inline ProductChoice choose_large(int64_t m, int64_t n, int64_t k, DType dtype, int threads, const ProductThresholds& t,
                                  OptionsOnDemand& o) {
  const bool large = work(m, n, k) >= t.large_work;
  const int th = large ? threads : 1;
  if (dtype == DType::f32 && work(m, n, k) >= t.dnnl_work && o().dnnl) return {ProductPath::dnnl, th};
  // OpenBLAS only on one thread: its own workers and Fluxion's pool awake together wait for each
  // other's cores (kLargeWork).
  if (large && floating(dtype) && std::max({m, n, k}) <= INT_MAX && th == 1 && std::min(m, n) > t.eigen_skinny &&
      o().blas)
    return {ProductPath::blas};
  if (dtype == DType::f64) {
    if (th > 1 && (std::min(m, n) <= t.split_skinny || k <= t.panel_max_k))
      return {k <= t.panel_max_k ? ProductPath::split_panels : ProductPath::split_eigen, th};
    if (th == 1 && n <= t.panel_narrow && (k <= t.panel_max_k || m <= t.panel_narrow)) return {ProductPath::panel};
  }
  return {ProductPath::eigen, th};
}

/// A matrix-vector product of `outputs` results and `outputs * k` matrix elements.
inline ProductChoice choose_vector(int64_t outputs, int64_t k, DType dtype, int threads, const ProductThresholds& t,
                                   OptionsOnDemand& o) {
  const double elements = static_cast<double>(outputs) * static_cast<double>(k);
  if (elements >= t.parallel_gemv) {
    const int th = static_cast<int>(std::min<int64_t>(threads, outputs / t.gemv_slice));
    if (th > 1) return {ProductPath::split_gemv, th};
  }
  const bool floating = dtype == DType::f32 || dtype == DType::f64;
  return {floating && elements >= t.blas_gemv && o().blas ? ProductPath::blas_gemv : ProductPath::gemv};
}

}  // namespace choice_detail

/// The register kernels' part of the choice (small products of a floating type), `none` when none
/// of them takes the product. Cheaper than packing for the blocked kernel: 1000x2x2 f64 7.7 µs in
/// Eigen against 0.7 µs (thin_fixed), 1000x10x10 20 against 10 µs (thin_register).
inline ProductPath choose_register_product(int64_t m, int64_t n, int64_t k, DType dtype, bool trans_b,
                                           const ProductThresholds& t = kProductThresholds) {
  if (!choice_detail::floating(dtype)) return ProductPath::none;
  const int64_t cols = t.register_cols(dtype);
  if (n < 2 || n > cols) return ProductPath::none;
  if (n <= t.small_dim && k >= 2 && k <= t.small_dim) return ProductPath::thin_fixed;
  if (n <= t.small_dim && m >= 2 && m <= t.small_dim) return ProductPath::short_fixed;
  if (k <= cols) return ProductPath::thin_register;
  if (!trans_b && m <= cols) return ProductPath::short_register;
  return ProductPath::none;
}

/// choose_product's rule for a whole dot_general: `tiny` when this holds, else `planned`. Inline
/// on its own because every dot_general asks it first (a call of choose_product cost a tenth of a
/// tiny product).
inline bool tiny_product_fits(int64_t m, int64_t n, int64_t k, const ProductLayout& layout,
                              const ProductThresholds& t = kProductThresholds) {
  return !layout.batch_dims && layout.max_rank <= 2 && layout.max_dim <= t.tiny_dim && m * n * k <= t.tiny_work;
}

/// How to compute an m x n x k product of `dtype` (for `matrices`: each of layout.batch ones)
/// when `threads` threads may work on it (kernel_threads(): 1 inside a parallel region), with
/// `options` (none given: product_options(), read only by the paths that depend on them).
/// Preconditions: matrices, strided and tile products have m, n, k >= 1 (a planned dot_general
/// handles empty results and k = 0 itself).
inline ProductChoice choose_product(int64_t m, int64_t n, int64_t k, DType dtype, int threads,
                                    const ProductLayout& layout, const ProductThresholds& t = kProductThresholds,
                                    const ProductOptions* options = nullptr) {
  using namespace choice_detail;
  OptionsOnDemand o(options);
  switch (layout.source) {
    case ProductSource::dot_general:
      return {tiny_product_fits(m, n, k, layout, t) ? ProductPath::tiny : ProductPath::planned};
    case ProductSource::tile: {  // on the calling thread; OpenBLAS needs no `large` here
      if (dtype == DType::f32 && work(m, n, k) >= t.dnnl_work && o().dnnl) return {ProductPath::dnnl};
      if (dtype == DType::f64 && k <= t.panel_max_k) return {ProductPath::panel};
      if (std::min(m, n) > t.eigen_skinny && floating(dtype) && o().blas) return {ProductPath::blas};
      return {ProductPath::eigen};
    }
    case ProductSource::strided: return choose_large(m, n, k, dtype, threads, t, o);
    case ProductSource::matrices: break;
  }
  // Batches that are large together but not each (each would run on the calling thread) are
  // shared out over the threads, each batch then on one.
  const int batch_threads = static_cast<int>(std::min<int64_t>(threads, layout.batch));
  const double each = work(m, n, k);
  if (batch_threads > 1 && each < t.large_work && each * static_cast<double>(layout.batch) >= t.large_work) {
    ProductLayout one = layout;
    one.batch = 1;
    ProductChoice c = choose_product(m, n, k, dtype, 1, one, t, options);
    c.batch_threads = batch_threads;
    return c;
  }
  if (m == 1 && n == 1) return {ProductPath::dot};
  if (n == 1) return choose_vector(m, k, dtype, threads, t, o);
  if (k == 1) return {ProductPath::outer};
  if (m == 1) return choose_vector(n, k, dtype, threads, t, o);
  if (each < t.large_work) {
    const ProductPath small = choose_register_product(m, n, k, dtype, layout.trans_b, t);
    if (small != ProductPath::none) return {small};
    if (m <= t.small_dim && n <= t.small_dim) return {ProductPath::lazy};
  }
  // The blocked product packed all of a first (1000 x 1000 x 2: slower than two GEMVs).
  const int64_t cols = t.register_cols(dtype);
  if (floating(dtype) && !layout.trans_a && n <= t.small_dim && k > cols && m > cols) {
    int th = 1;
    if (static_cast<double>(m) * static_cast<double>(k) >= t.parallel_gemv)
      th = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, m / t.gemv_slice)));
    return {ProductPath::stacked_gemv, th};
  }
  return choose_large(m, n, k, dtype, threads, t, o);
}

}  // namespace fluxion::cpu
