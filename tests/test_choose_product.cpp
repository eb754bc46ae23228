// choose_product (backends/cpu/gemm_choice.hpp) on its own: each threshold of ProductThresholds
// with the product just below and just above it, the effect of the dtype, the threads, the
// layout and the options (libraries, switches); then, for every path, a product that takes it
// through the dispatching entry points, against the reference kernel.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/gemm.hpp"
#include "backends/reference/dot_general.hpp"
#include "runtime/switches.hpp"

namespace fx = fluxion;
using fx::cpu::ProductChoice;
using fx::cpu::ProductLayout;
using fx::cpu::ProductOptions;
using fx::cpu::ProductPath;
using fx::cpu::ProductSource;
using Dims = std::vector<int64_t>;

namespace {

constexpr fx::cpu::ProductThresholds T = fx::cpu::kProductThresholds;
const ProductOptions kAll{true, true};  // both libraries
const ProductOptions kNoLibraries{false, false};

ProductLayout matrices(bool ta = false, bool tb = false, int64_t batch = 1) {
  ProductLayout l;
  l.trans_a = ta, l.trans_b = tb, l.batch = batch;
  return l;
}
ProductLayout source(ProductSource s) {
  ProductLayout l;
  l.source = s;
  return l;
}
ProductLayout whole(int64_t max_rank, int64_t max_dim, bool batch_dims = false) {
  ProductLayout l = source(ProductSource::dot_general);
  l.max_rank = max_rank, l.max_dim = max_dim, l.batch_dims = batch_dims;
  return l;
}

ProductChoice choose(int64_t m, int64_t n, int64_t k, fx::DType d, int threads, const ProductLayout& l,
                     const ProductOptions& o = kAll) {
  return fx::cpu::choose_product(m, n, k, d, threads, l, T, &o);
}
std::string name(ProductPath p) { return fx::cpu::product_path_name(p); }
#define CHECK_PATH(choice, want) CHECK(name((choice).path) == name(want))

}  // namespace

TEST_CASE("choose_product: the tiny rule (dims, work, rank, batch dims)") {
  CHECK_PATH(choose(4, 4, 16, fx::f64, 1, whole(2, 16)), ProductPath::tiny);  // work 256, dim 16
  CHECK_PATH(choose(4, 4, 17, fx::f64, 1, whole(2, 17)), ProductPath::planned);
  CHECK_PATH(choose(1, 1, 17, fx::f64, 1, whole(1, 17)), ProductPath::planned);  // dim 17 alone
  CHECK_PATH(choose(12, 4, 5, fx::f32, 1, whole(2, 12)), ProductPath::tiny);     // work 240
  CHECK_PATH(choose(13, 4, 5, fx::f32, 1, whole(2, 13)), ProductPath::planned);  // work 260
  CHECK_PATH(choose(2, 2, 2, fx::i32, 1, whole(3, 2)), ProductPath::planned);    // rank 3
  CHECK_PATH(choose(2, 2, 2, fx::i64, 1, whole(2, 2, true)), ProductPath::planned);
  CHECK_PATH(choose(3, 0, 4, fx::f64, 1, whole(2, 4)), ProductPath::tiny);  // empty results too
}

TEST_CASE("choose_product: dots, outer products and matrix-vector products") {
  CHECK_PATH(choose(1, 1, 100000, fx::f64, 2, matrices()), ProductPath::dot);
  CHECK_PATH(choose(3, 5, 1, fx::f64, 2, matrices()), ProductPath::outer);
  CHECK_PATH(choose(1, 5, 1, fx::f64, 2, matrices()), ProductPath::outer);  // k = 1 before m = 1
  // Split from parallel_gemv matrix elements, in slices of gemv_slice results (at least two).
  const int64_t k_split = static_cast<int64_t>(T.parallel_gemv) / 32;
  const ProductChoice split = choose(32, 1, k_split, fx::f64, 2, matrices());
  CHECK_PATH(split, ProductPath::split_gemv);
  CHECK(split.threads == 2);
  CHECK_PATH(choose(1, 32, k_split, fx::f32, 2, matrices()), ProductPath::split_gemv);  // vector * matrix
  CHECK_PATH(choose(32, 1, k_split - 1, fx::f64, 2, matrices()), ProductPath::gemv);
  CHECK_PATH(choose(2 * T.gemv_slice - 1, 1, 2 * k_split, fx::f64, 2, matrices()), ProductPath::gemv);
  CHECK_PATH(choose(32, 1, k_split, fx::f64, 1, matrices()), ProductPath::gemv);
  CHECK(choose(1000, 1, 1000, fx::f64, 3, matrices()).threads == 3);
  // OpenBLAS on one thread from blas_gemv elements, floating types only.
  const int64_t k_blas = static_cast<int64_t>(T.blas_gemv) / 64;
  CHECK_PATH(choose(64, 1, k_blas, fx::f64, 1, matrices()), ProductPath::blas_gemv);
  CHECK_PATH(choose(64, 1, k_blas - 1, fx::f64, 1, matrices()), ProductPath::gemv);
  CHECK_PATH(choose(64, 1, k_blas, fx::f64, 1, matrices(), kNoLibraries), ProductPath::gemv);
  CHECK_PATH(choose(64, 1, k_blas, fx::i32, 1, matrices()), ProductPath::gemv);
  CHECK(name(fx::cpu::choose_gemv_slice(T.blas_gemv, fx::f32, T, &kAll)) == "blas_gemv");
  CHECK(name(fx::cpu::choose_gemv_slice(T.blas_gemv - 1, fx::f32, T, &kAll)) == "gemv");
}

TEST_CASE("choose_product: batches large together but not each are shared out over the threads") {
  const ProductChoice five = choose(100, 100, 100, fx::f32, 2, matrices(false, false, 5));  // 5e6 >= large_work
  CHECK(five.batch_threads == 2);
  CHECK(five.threads == 1);
  CHECK_PATH(five, ProductPath::dnnl);
  CHECK(choose(100, 100, 100, fx::f32, 2, matrices(false, false, 4)).batch_threads == 1);  // 4e6 < large_work
  CHECK(choose(100, 100, 100, fx::f32, 1, matrices(false, false, 5)).batch_threads == 1);
  CHECK(choose(100, 100, 100, fx::f32, 3, matrices(false, false, 2000)).batch_threads == 3);
  CHECK(choose(4, 4, 4, fx::f32, 8, matrices(false, false, 100000)).batch_threads == 8);
  // Each large: the batches run one by one, each on every thread.
  const ProductChoice each = choose(200, 200, 200, fx::f64, 2, matrices(false, false, 3));
  CHECK(each.batch_threads == 1);
  CHECK(each.threads == 2);
  CHECK_PATH(each, ProductPath::eigen);
}

TEST_CASE("choose_product: register kernels for small floating products") {
  const int64_t rc = T.register_cols_f64;
  CHECK_PATH(choose(1000, 4, 4, fx::f64, 2, matrices()), ProductPath::thin_fixed);
  CHECK_PATH(choose(1000, 2, 2, fx::f32, 2, matrices(true, true)), ProductPath::thin_fixed);
  CHECK_PATH(choose(1000, 4, 5, fx::f64, 2, matrices()), ProductPath::thin_register);
  CHECK_PATH(choose(1000, 5, 2, fx::f64, 2, matrices()), ProductPath::thin_register);
  CHECK_PATH(choose(4, 4, 1000, fx::f64, 2, matrices()), ProductPath::short_fixed);
  CHECK_PATH(choose(2, 3, 1000, fx::f32, 2, matrices(false, true)), ProductPath::short_fixed);
  CHECK_PATH(choose(5, 4, 1000, fx::f64, 2, matrices()), ProductPath::short_register);
  CHECK_PATH(choose(5, 4, 1000, fx::f64, 2, matrices(false, true)), ProductPath::panel);  // b transposed
  CHECK_PATH(choose(1000, rc, rc, fx::f64, 1, matrices()), ProductPath::thin_register);
  CHECK_PATH(choose(1000, rc + 1, rc, fx::f64, 1, matrices()), ProductPath::panel);
  CHECK_PATH(choose(rc, rc, rc + 1, fx::f64, 1, matrices()), ProductPath::short_register);
  CHECK_PATH(choose(rc + 1, rc, rc + 1, fx::f64, 1, matrices()), ProductPath::panel);
  const int64_t rc32 = T.register_cols_f32;
  CHECK_PATH(choose(1000, rc32, rc32, fx::f32, 1, matrices()), ProductPath::thin_register);
  CHECK_PATH(choose(1000, rc32 + 1, rc32, fx::f32, 1, matrices(), kNoLibraries), ProductPath::eigen);
  CHECK(name(fx::cpu::choose_register_product(1000, rc, rc, fx::f64, false, T)) == "thin_register");
  CHECK(name(fx::cpu::choose_register_product(1000, 1, 4, fx::f64, false, T)) == "none");
  CHECK(name(fx::cpu::choose_register_product(1000, 2, 2, fx::i32, false, T)) == "none");
  // Only below large_work.
  const int64_t m_large = static_cast<int64_t>(T.large_work) / 16;
  CHECK_PATH(choose(m_large - 1, 4, 4, fx::f64, 1, matrices()), ProductPath::thin_fixed);
  CHECK_PATH(choose(m_large, 4, 4, fx::f64, 1, matrices()), ProductPath::panel);
  // Integers: Eigen's coefficient-based product up to small_dim, else its blocked product.
  CHECK_PATH(choose(4, 4, 100, fx::i32, 1, matrices()), ProductPath::lazy);
  CHECK_PATH(choose(3, 3, 3, fx::i64, 1, matrices()), ProductPath::lazy);
  CHECK_PATH(choose(5, 4, 100, fx::i32, 1, matrices()), ProductPath::eigen);
}

TEST_CASE("choose_product: stacked matrix-vector products (2..4 columns of op(b), a not transposed)") {
  const int64_t rc = T.register_cols_f64;
  const ProductChoice s = choose(1000, 2, 1000, fx::f64, 2, matrices(false, true));
  CHECK_PATH(s, ProductPath::stacked_gemv);
  CHECK(s.threads == 2);
  CHECK(choose(100, 2, 100, fx::f64, 2, matrices()).threads == 1);  // below parallel_gemv
  CHECK_PATH(choose(1000, 2, 1000, fx::f64, 2, matrices(true, false)), ProductPath::eigen);
  CHECK_PATH(choose(1000, 5, 1000, fx::f64, 1, matrices()), ProductPath::eigen);
  CHECK_PATH(choose(1000, 4, rc, fx::f64, 1, matrices()), ProductPath::thin_register);
  CHECK_PATH(choose(1000, 4, rc + 1, fx::f64, 1, matrices()), ProductPath::stacked_gemv);
  CHECK_PATH(choose(rc, 2, rc + 1, fx::f64, 1, matrices(false, true)), ProductPath::panel);
  CHECK_PATH(choose(rc + 1, 2, rc + 1, fx::f64, 1, matrices(false, true)), ProductPath::stacked_gemv);
  CHECK_PATH(choose(1000, 4, 1000, fx::i32, 1, matrices()), ProductPath::eigen);
}

TEST_CASE("choose_product: oneDNN for f32 from dnnl_work, OpenBLAS for large products on one thread") {
  CHECK_PATH(choose(64, 32, 32, fx::f32, 1, matrices()), ProductPath::dnnl);  // exactly dnnl_work
  CHECK_PATH(choose(63, 32, 32, fx::f32, 1, matrices()), ProductPath::eigen);
  CHECK_PATH(choose(64, 32, 32, fx::f32, 1, matrices(), kNoLibraries), ProductPath::eigen);
  CHECK_PATH(choose(64, 32, 32, fx::f64, 1, matrices()), ProductPath::panel);
  const ProductChoice big = choose(200, 200, 200, fx::f32, 2, matrices());
  CHECK_PATH(big, ProductPath::dnnl);
  CHECK(big.threads == 2);
  // OpenBLAS: large (128 x 128 x 256 is exactly large_work), one thread, min(m, n) > eigen_skinny.
  CHECK_PATH(choose(128, 128, 256, fx::f64, 1, matrices()), ProductPath::blas);
  CHECK_PATH(choose(128, 128, 255, fx::f64, 1, matrices()), ProductPath::eigen);
  CHECK_PATH(choose(128, 128, 256, fx::f64, 2, matrices()), ProductPath::eigen);  // neither skinny nor short
  CHECK_PATH(choose(128, 128, 256, fx::f64, 1, matrices(), kNoLibraries), ProductPath::eigen);
  CHECK_PATH(choose(33, 1000, 200, fx::f64, 1, matrices()), ProductPath::blas);
  CHECK_PATH(choose(32, 1000, 200, fx::f64, 1, matrices()), ProductPath::eigen);
  CHECK_PATH(choose(200, 200, 200, fx::f32, 1, matrices(), ProductOptions{false, true}), ProductPath::blas);
  CHECK_PATH(choose(200, 200, 200, fx::i64, 1, matrices()), ProductPath::eigen);
}

TEST_CASE("choose_product: f64 slices per thread (skinny or short) and register panels on one thread") {
  const ProductChoice skinny = choose(1000, 64, 1000, fx::f64, 2, matrices());
  CHECK_PATH(skinny, ProductPath::split_eigen);
  CHECK(skinny.threads == 2);
  CHECK_PATH(choose(1000, 65, 1000, fx::f64, 2, matrices()), ProductPath::eigen);
  const ProductChoice short_k = choose(1000, 1000, 128, fx::f64, 2, matrices());
  CHECK_PATH(short_k, ProductPath::split_panels);
  CHECK_PATH(choose(1000, 1000, 129, fx::f64, 2, matrices()), ProductPath::eigen);
  CHECK_PATH(choose(1000, 1000, 128, fx::f32, 2, matrices(), kNoLibraries), ProductPath::eigen);
  CHECK_PATH(choose(1000, 64, 1000, fx::f64, 1, matrices(), kNoLibraries), ProductPath::eigen);
  // One thread, below large_work: n <= panel_narrow and (k <= panel_max_k or m <= panel_narrow).
  CHECK_PATH(choose(1000, 64, 64, fx::f64, 1, matrices()), ProductPath::panel);
  CHECK_PATH(choose(1000, 65, 64, fx::f64, 1, matrices()), ProductPath::eigen);
  CHECK_PATH(choose(500, 64, 128, fx::f64, 1, matrices()), ProductPath::panel);
  CHECK_PATH(choose(500, 64, 129, fx::f64, 1, matrices()), ProductPath::eigen);
  CHECK_PATH(choose(64, 64, 1000, fx::f64, 1, matrices()), ProductPath::panel);
  CHECK_PATH(choose(65, 64, 1000, fx::f64, 1, matrices()), ProductPath::eigen);
  // Thresholds are read from the struct passed in.
  fx::cpu::ProductThresholds t = T;
  t.panel_max_k = 64;
  CHECK(name(fx::cpu::choose_product(500, 64, 100, fx::f64, 1, matrices(), t, &kAll).path) == "eigen");
  CHECK(name(fx::cpu::choose_product(500, 64, 100, fx::f64, 1, matrices(), T, &kAll).path) == "panel");
}

TEST_CASE("choose_product: tiles and strided products") {
  const ProductLayout tile = source(ProductSource::tile), strided = source(ProductSource::strided);
  CHECK_PATH(choose(64, 32, 32, fx::f32, 2, tile), ProductPath::dnnl);
  CHECK(choose(200, 200, 200, fx::f32, 2, tile).threads == 1);  // tiles run on the calling thread
  CHECK_PATH(choose(63, 32, 32, fx::f32, 2, tile), ProductPath::eigen);
  CHECK_PATH(choose(40, 40, 40, fx::f32, 1, tile, ProductOptions{false, true}), ProductPath::blas);  // not large
  CHECK_PATH(choose(300, 300, 128, fx::f64, 1, tile), ProductPath::panel);
  CHECK_PATH(choose(33, 33, 129, fx::f64, 1, tile), ProductPath::blas);
  CHECK_PATH(choose(33, 32, 129, fx::f64, 1, tile), ProductPath::eigen);
  CHECK_PATH(choose(33, 33, 129, fx::f64, 1, tile, kNoLibraries), ProductPath::eigen);
  // Strided products (gram's block rows) take the large paths only: no register kernels.
  CHECK_PATH(choose(4, 4, 4, fx::f64, 1, strided), ProductPath::panel);
  CHECK_PATH(choose(128, 1000, 1000, fx::f64, 1, strided), ProductPath::blas);
  CHECK_PATH(choose(64, 1000, 1000, fx::f64, 2, strided), ProductPath::split_eigen);
}

TEST_CASE("choose_product: the blas switch reaches product_options") {
  fx::runtime::set_disabled("");
  const ProductOptions on = fx::cpu::product_options();
#if FLUXION_WITH_BLAS
  CHECK(on.blas == fx::cpu::blas_usable());
#else
  CHECK_FALSE(on.blas);
#endif
#if FLUXION_WITH_DNNL
  CHECK(on.dnnl);
#else
  CHECK_FALSE(on.dnnl);
#endif
  fx::runtime::set_disabled("blas");
  const ProductOptions off = fx::cpu::product_options();
  fx::runtime::set_disabled("");
  CHECK_FALSE(off.blas);
  CHECK_FALSE(off.dnnl);
}

namespace {

/// One product of `batch` x m x n x k through fx::cpu::dot_general (lhs stored [batch,] m x k or
/// k x m when ta, rhs k x n or n x k when tb) on `threads` threads; the path the dispatcher asks
/// for must be `want` (skipped where the build lacks its library), the result the reference's.
template <class E>
void check_dispatch(ProductPath want, int64_t batch, int64_t m, int64_t n, int64_t k, bool ta, bool tb, int threads) {
  const std::string path = name(want);
  CAPTURE(path);
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(batch);
  CAPTURE(ta);
  CAPTURE(tb);
  CAPTURE(threads);
  const fx::DType dtype = fx::cpu::gemm_detail::kAccDType<fx::cpu::gemm_detail::Acc<E>>;
  const ProductOptions options = fx::cpu::product_options();
  if ((want == ProductPath::dnnl && !options.dnnl) ||
      ((want == ProductPath::blas || want == ProductPath::blas_gemv) && !options.blas)) {
    MESSAGE("skipped: this build or CPU does not use the library of path ", name(want));
    return;
  }
  const int before = fx::num_threads();
  fx::set_num_threads(threads);
  const bool batched = batch > 1;
  Dims ls = ta ? Dims{k, m} : Dims{m, k}, rs = tb ? Dims{n, k} : Dims{k, n};
  fx::AxisPair contract{{ta ? 0 : 1}, {tb ? 1 : 0}}, batch_pairs;
  if (batched) {
    ls.insert(ls.begin(), batch), rs.insert(rs.begin(), batch);
    contract.first[0] += 1, contract.second[0] += 1;
    batch_pairs = {{0}, {0}};
  }
  // The choice the dispatcher makes for the planned matrices (tiny ones: checked below).
  if (want != ProductPath::tiny) {
    const ProductChoice got =
        fx::cpu::choose_product(m, n, k, dtype, fx::cpu::kernel_threads(), matrices(ta, tb, batch));
    CHECK(name(got.path) == name(want));
  }
  std::vector<E> a(static_cast<size_t>(batch * m * k)), b(static_cast<size_t>(batch * k * n));
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<E>(std::is_integral_v<E> ? int64_t(i * 7919 % 23) - 11 : std::sin(0.37 * double(i)));
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<E>(std::is_integral_v<E> ? int64_t(i % 5) - 2 : std::cos(0.11 * double(i)));
  // Rows of zeros in b (the panels skip them where op(a) is finite).
  for (int64_t i = 0; i < std::min<int64_t>(static_cast<int64_t>(b.size()), 3 * n); ++i)
    b[static_cast<size_t>(i)] = E(0);
  std::vector<E> want_out(static_cast<size_t>(batch * m * n)), out(want_out.size(), E(-7));
  fx::reference::dot_general(a.data(), ls, b.data(), rs, contract, batch_pairs, want_out.data());
  using Acc = fx::cpu::gemm_detail::Acc<E>;
  const bool tiny = fx::cpu::gemm_detail::tiny_dot_general(reinterpret_cast<const Acc*>(a.data()), ls,
                                                           reinterpret_cast<const Acc*>(b.data()), rs, contract,
                                                           batch_pairs, reinterpret_cast<Acc*>(out.data()));
  CHECK(tiny == (want == ProductPath::tiny));
  fx::cpu::dot_general(a.data(), ls, b.data(), rs, contract, batch_pairs, out.data());
  fx::set_num_threads(before);
  double worst = 0;
  for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::fabs(double(out[i]) - double(want_out[i])));
  if constexpr (std::is_integral_v<E>) CHECK(worst == 0);
  else CHECK(worst <= (sizeof(E) == 4 ? 1e-5 : 1e-12) * double(k));
}

/// A strided product (gram's block rows: aᵀ b with leading dims wider than the product) or a tile
/// of a product, through strided_gemm / product_tile, against the reference.
void check_strided_and_tile(ProductPath want, bool tile, int64_t m, int64_t n, int64_t k, int threads) {
  const std::string path = name(want);
  CAPTURE(path);
  CAPTURE(tile);
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(threads);
  const ProductOptions options = fx::cpu::product_options();
  if ((want == ProductPath::blas && !options.blas) || (want == ProductPath::dnnl && !options.dnnl)) {
    MESSAGE("skipped: this build or CPU does not use the library of path ", name(want));
    return;
  }
  const int before = fx::num_threads();
  fx::set_num_threads(threads);
  // a stored k x (m + 3), read transposed; b stored k x (n + 5); c with rows n + 2 wide.
  const int64_t lda = m + 3, ldb = n + 5, ldc = n + 2;
  std::vector<double> a(static_cast<size_t>(k * lda)), b(static_cast<size_t>(k * ldb)),
      c(static_cast<size_t>(m * ldc), -7.0);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.37 * double(i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.11 * double(i));
  ProductLayout layout = source(tile ? ProductSource::tile : ProductSource::strided);
  layout.trans_a = true;
  CHECK(name(fx::cpu::choose_product(m, n, k, fx::f64, fx::cpu::kernel_threads(), layout).path) == name(want));
  if (tile) {
    // The tile [0, m) x [0, n) of an m x n x k product whose operands are a (k x lda) and b (k x ldb).
    fx::cpu::gemm_detail::MatrixView v;
    v.ok = true, v.trans_a = true, v.m = lda, v.n = ldb, v.k = k;
    fx::cpu::gemm_detail::product_tile<true, false>(v, a.data(), b.data(), 0, m, 0, n, c.data(), ldc);
  } else {
    fx::cpu::gemm_detail::strided_gemm<true, false>(a.data(), lda, b.data(), ldb, c.data(), ldc, m, n, k);
  }
  fx::set_num_threads(before);
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < k; ++l) sum += a[static_cast<size_t>(l * lda + i)] * b[static_cast<size_t>(l * ldb + j)];
      worst = std::max(worst, std::fabs(c[static_cast<size_t>(i * ldc + j)] - sum));
    }
  CHECK(worst <= 1e-12 * double(k));
  for (int64_t i = 0; i < m; ++i) CHECK(c[static_cast<size_t>(i * ldc + n)] == -7.0);  // past the row: untouched
}

}  // namespace

TEST_CASE("dispatch through choose_product: every path gives the reference's result") {
  fx::runtime::set_disabled("");
  check_dispatch<double>(ProductPath::tiny, 1, 3, 4, 5, false, true, 1);
  check_dispatch<int32_t>(ProductPath::tiny, 1, 2, 2, 2, true, false, 1);
  check_dispatch<double>(ProductPath::dot, 1, 1, 1, 1000, false, false, 1);
  check_dispatch<double>(ProductPath::outer, 1, 30, 20, 1, false, false, 1);
  check_dispatch<float>(ProductPath::gemv, 1, 40, 1, 300, true, false, 1);
  check_dispatch<double>(ProductPath::blas_gemv, 1, 1, 600, 500, false, true, 1);
  check_dispatch<double>(ProductPath::split_gemv, 1, 700, 1, 300, false, false, 2);
  check_dispatch<int64_t>(ProductPath::split_gemv, 1, 1, 700, 300, false, true, 2);
  check_dispatch<double>(ProductPath::thin_fixed, 1, 1000, 3, 2, true, false, 1);
  check_dispatch<float>(ProductPath::short_fixed, 1, 3, 4, 1000, false, true, 1);
  check_dispatch<double>(ProductPath::thin_register, 1, 999, 7, 7, false, false, 1);
  check_dispatch<double>(ProductPath::short_register, 1, 6, 6, 1000, true, false, 1);
  check_dispatch<int32_t>(ProductPath::lazy, 1, 3, 4, 100, false, false, 1);
  check_dispatch<double>(ProductPath::stacked_gemv, 1, 1000, 2, 1000, false, true, 2);
  check_dispatch<float>(ProductPath::dnnl, 1, 64, 48, 40, true, true, 1);
  check_dispatch<double>(ProductPath::blas, 1, 130, 140, 256, false, false, 1);
  check_dispatch<double>(ProductPath::split_panels, 1, 1001, 300, 20, true, false, 2);
  check_dispatch<double>(ProductPath::split_eigen, 1, 1000, 40, 800, false, true, 2);
  check_dispatch<double>(ProductPath::panel, 1, 999, 33, 100, false, false, 1);
  check_dispatch<double>(ProductPath::eigen, 1, 120, 100, 80, false, false, 1);
  check_dispatch<int64_t>(ProductPath::eigen, 1, 60, 50, 70, true, false, 2);
  // Batches shared out over the threads, each by its own path.
  check_dispatch<double>(ProductPath::thin_register, 400, 1000, 7, 7, false, false, 2);
  check_dispatch<float>(ProductPath::gemv, 4000, 64, 1, 64, false, true, 2);
  // Strided products and tiles.
  check_strided_and_tile(ProductPath::panel, false, 60, 50, 100, 1);
  check_strided_and_tile(ProductPath::blas, false, 128, 300, 200, 1);
  check_strided_and_tile(ProductPath::split_panels, false, 300, 300, 100, 2);
  check_strided_and_tile(ProductPath::eigen, false, 100, 200, 200, 2);
  check_strided_and_tile(ProductPath::panel, true, 70, 90, 128, 1);
  check_strided_and_tile(ProductPath::blas, true, 70, 90, 129, 1);
  check_strided_and_tile(ProductPath::eigen, true, 70, 20, 129, 1);
}

TEST_CASE("dispatch: with the blas switch off, the same products give the same results") {
  fx::runtime::set_disabled("blas");
  check_dispatch<double>(ProductPath::eigen, 1, 130, 140, 256, false, false, 1);
  check_dispatch<double>(ProductPath::gemv, 1, 1, 600, 500, false, true, 1);
  check_dispatch<float>(ProductPath::eigen, 1, 64, 48, 40, true, true, 1);
  check_dispatch<double>(ProductPath::panel, 1, 999, 33, 100, false, false, 1);
  check_dispatch<double>(ProductPath::split_panels, 1, 1001, 300, 20, true, false, 2);
  check_strided_and_tile(ProductPath::eigen, true, 70, 90, 129, 1);
  fx::runtime::set_disabled("");
}
