// fx::conv_general_dilated, fx::conv and fx::conv_transpose: a CNN-like layer against a hand-written loop (both
// layouts, f32 and f64), conv_transpose against JAX's semantics on hand-derived 1-d cases and as the gradient
// of conv, depthwise groups against per-channel convolutions, a small CNN's loss gradient against finite
// differences (eager and jit), and errors that only the op layer can raise.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include <fluxion/fluxion.hpp>

#include "primitives/convolution.hpp"
#include "samples.hpp"
#include "test_util.hpp"

namespace fx = fluxion;
using fluxion::testing::message_of;

namespace {

std::vector<double> vals(const fx::Tensor& t) { return t.to_vector<double>(); }

using fluxion::testing::max_diff;

fx::Tensor random(std::vector<int64_t> shape, uint64_t seed, fx::DType dt = fx::f64) {
  return fx::testing::random_tensor(fx::Shape(shape), dt, seed, -1, 1);
}

/// NCHW x OIHW, zero padding (ph, pw) on both sides, strides (sh, sw): the textbook loop.
std::vector<double> conv_loop(const fx::Tensor& x, const fx::Tensor& w, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                              std::vector<int64_t>& out_shape) {
  const auto xs = x.shape().dims(), ws = w.shape().dims();
  const int64_t n = xs[0], c = xs[1], h = xs[2], wd = xs[3], o = ws[0], kh = ws[2], kw = ws[3];
  const int64_t oh = (h + 2 * ph - kh) / sh + 1, ow = (wd + 2 * pw - kw) / sw + 1;
  out_shape = {n, o, oh, ow};
  const std::vector<double> xv = vals(x), wv = vals(w);
  std::vector<double> out(static_cast<size_t>(n * o * oh * ow), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t f = 0; f < o; ++f)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = 0;
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t u = 0; u < kh; ++u)
              for (int64_t v = 0; v < kw; ++v) {
                const int64_t r = i * sh + u - ph, s = j * sw + v - pw;
                if (r < 0 || r >= h || s < 0 || s >= wd) continue;
                acc += xv[static_cast<size_t>(((b * c + ch) * h + r) * wd + s)] *
                       wv[static_cast<size_t>(((f * c + ch) * kh + u) * kw + v)];
              }
          out[static_cast<size_t>(((b * o + f) * oh + i) * ow + j)] = acc;
        }
  return out;
}

}  // namespace

TEST_CASE("conv: a CNN layer (SAME, stride 2 x 1) equals the hand-written loop, NCHW and NHWC, f64 and f32") {
  fx::Tensor x = random({2, 3, 7, 6}, 1), w = random({5, 3, 3, 3}, 2);
  std::vector<int64_t> shape;
  // SAME at stride 2 over 7 rows: 4 outputs, 2 rows of padding split (1, 1); stride 1 over 6 columns: (1, 1).
  const std::vector<double> want = conv_loop(x, w, 2, 1, 1, 1, shape);
  fx::Tensor y = fx::conv(x, w, {2, 1}, "SAME");
  CHECK(y.shape().dims() == shape);
  CHECK(max_diff(y, fx::from_vector(want, fx::Shape(shape))) < 1e-13);
  fx::Tensor y32 = fx::conv(fx::astype(x, fx::f32), fx::astype(w, fx::f32), {2, 1}, "SAME");
  CHECK(y32.dtype() == fx::f32);
  CHECK(max_diff(fx::astype(y32, fx::f64), y) < 1e-5);
  // The same layer in NHWC / HWIO: the NCHW result transposed.
  fx::Tensor y_nhwc = fx::conv_general_dilated(fx::transpose(x, {0, 2, 3, 1}), fx::transpose(w, {2, 3, 1, 0}), {2, 1},
                                               "SAME", {}, {}, {"NHWC", "HWIO", "NHWC"});
  CHECK(max_diff(y_nhwc, fx::transpose(y, {0, 2, 3, 1})) < 1e-13);
  // Explicit padding equals the resolved SAME padding.
  CHECK(max_diff(fx::conv_general_dilated(x, w, {2, 1}, {{1, 1}, {1, 1}}), y) < 1e-15);
}

TEST_CASE("conv: VALID and SAME_LOWER padding, and integer operands of the op layer") {
  fx::Tensor x = random({1, 2, 6, 6}, 3), w = random({3, 2, 2, 2}, 4);
  std::vector<int64_t> shape;
  const std::vector<double> valid = conv_loop(x, w, 1, 1, 0, 0, shape);
  CHECK(max_diff(fx::conv(x, w, {1, 1}, "VALID"), fx::from_vector(valid, fx::Shape(shape))) < 1e-13);
  // A 2-wide window at stride 1 needs one element of padding: SAME puts it after, SAME_LOWER before.
  fx::Tensor same = fx::conv(x, w, {1, 1}, "SAME"), lower = fx::conv(x, w, {1, 1}, "SAME_LOWER");
  CHECK(max_diff(same, fx::conv_general_dilated(x, w, {1, 1}, {{0, 1}, {0, 1}})) < 1e-15);
  CHECK(max_diff(lower, fx::conv_general_dilated(x, w, {1, 1}, {{1, 0}, {1, 0}})) < 1e-15);
  // An integer input is promoted with the kernel (i32 and f64 give f64).
  fx::Tensor xi = fx::full({1, 2, 6, 6}, 2, fx::i32);
  fx::Tensor yi = fx::conv(xi, w, {1, 1}, "VALID");
  CHECK(yi.dtype() == fx::f64);
  CHECK(max_diff(yi, fx::conv(fx::full({1, 2, 6, 6}, 2.0, fx::f64), w, {1, 1}, "VALID")) == 0);
}

TEST_CASE("conv_transpose: JAX's semantics on hand-derived 1-d cases (NWC, WIO)") {
  fx::Tensor x = fx::from_vector(std::vector<double>{1, 2, 3}, fx::Shape{1, 3, 1});
  // VALID, stride 2, kernel [1, 10]: x dilated to [1,0,2,0,3], padded (1, 1), correlated with the kernel.
  fx::Tensor k2 = fx::from_vector(std::vector<double>{1, 10}, fx::Shape{2, 1, 1});
  CHECK(vals(fx::conv_transpose(x, k2, {2}, "VALID")) == std::vector<double>{10, 1, 20, 2, 30, 3});
  // SAME, stride 2, kernel [1, 10, 100]: padding (2, 1); output length 3 * 2.
  fx::Tensor k3 = fx::from_vector(std::vector<double>{1, 10, 100}, fx::Shape{3, 1, 1});
  CHECK(vals(fx::conv_transpose(x, k3, {2}, "SAME")) == std::vector<double>{100, 10, 201, 20, 302, 30});
  // transpose_kernel flips the kernel ([10, 1]): the gradient of the strided convolution.
  CHECK(vals(fx::conv_transpose(x, k2, {2}, "VALID", {}, {}, true)) == std::vector<double>{1, 10, 2, 20, 3, 30});
  // Explicit pairs pad the dilated input directly: (0, 0) drops the outer zeros.
  CHECK(vals(fx::conv_transpose(x, k2, {2}, {{0, 0}})) == std::vector<double>{1, 20, 2, 30});
}

TEST_CASE("conv_transpose with transpose_kernel is the gradient of conv (2-d, SAME and VALID, stride 2)") {
  fx::Tensor w = random({3, 3, 2, 4}, 5);  // HWIO
  for (const char* padding : {"SAME", "VALID"}) {
    const int64_t size = padding[0] == 'S' ? 8 : 9;  // sizes where the forward convolution covers every input
    fx::Tensor x = random({2, size, size, 2}, 6);
    auto f = [&](const fx::Tensor& in) {
      return fx::conv_general_dilated(in, w, {2, 2}, padding, {}, {}, {"NHWC", "HWIO", "NHWC"});
    };
    fx::Tensor ct = random(f(x).shape().dims(), 7);
    auto [y, pullback] = fx::vjp(f, x);
    fx::Tensor grad = std::get<0>(pullback(ct));
    CHECK(max_diff(fx::conv_transpose(ct, w, {2, 2}, padding, {}, {}, true), grad) < 1e-13);
  }
}

TEST_CASE("conv: depthwise groups equal one convolution per channel") {
  fx::Tensor x = random({2, 3, 5, 5}, 8), w = random({6, 1, 3, 3}, 9);  // 2 filters per channel
  fx::Tensor y = fx::conv_general_dilated(x, w, {1, 1}, "SAME", {}, {}, /*feature_group_count=*/3);
  for (int64_t c = 0; c < 3; ++c) {
    fx::Tensor xc = fx::lax::slice(x, {0, c, 0, 0}, {2, c + 1, 5, 5});
    fx::Tensor wc = fx::lax::slice(w, {2 * c, 0, 0, 0}, {2 * c + 2, 1, 3, 3});
    CHECK(max_diff(fx::lax::slice(y, {0, 2 * c, 0, 0}, {2, 2 * c + 2, 5, 5}), fx::conv(xc, wc, {1, 1}, "SAME")) <
          1e-14);
  }
}

TEST_CASE("conv: a small CNN's loss gradient matches finite differences, eagerly and under jit") {
  fx::Tensor x = random({2, 2, 6, 6}, 10), w1 = random({4, 2, 3, 3}, 11), w2 = random({3, 4, 3, 3}, 12);
  auto loss = [x](const fx::Tensor& a, const fx::Tensor& b) {
    fx::Tensor h = fx::tanh(fx::conv(x, a, {1, 1}, "SAME"));
    fx::Tensor y = fx::conv_general_dilated(h, b, {2, 2}, "VALID", {}, {1, 1});
    return fx::sum(y * y);
  };
  auto [g1, g2] = fx::grad(loss, fx::argnums<0, 1>)(w1, w2);
  auto [j1, j2] = fx::jit(fx::grad(loss, fx::argnums<0, 1>))(w1, w2);
  CHECK(max_diff(j1, g1) < 1e-12);
  CHECK(max_diff(j2, g2) < 1e-12);
  const double eps = 1e-6;
  auto fd = [&](const fx::Tensor& t, size_t i, bool first) {
    std::vector<double> plus = vals(t), minus = vals(t);
    plus[i] += eps, minus[i] -= eps;
    fx::Tensor tp = fx::from_vector(plus, t.shape()), tm = fx::from_vector(minus, t.shape());
    const double lp = (first ? loss(tp, w2) : loss(w1, tp)).item<double>();
    const double lm = (first ? loss(tm, w2) : loss(w1, tm)).item<double>();
    return (lp - lm) / (2 * eps);
  };
  const std::vector<double> v1 = vals(g1), v2 = vals(g2);
  for (size_t i = 0; i < v1.size(); i += 5) CHECK(v1[i] == doctest::Approx(fd(w1, i, true)).epsilon(1e-6));
  for (size_t i = 0; i < v2.size(); i += 7) CHECK(v2[i] == doctest::Approx(fd(w2, i, false)).epsilon(1e-6));
}

TEST_CASE("conv: the CPU kernel equals the reference on shapes the samples are too small for") {
  // Chunked patch matrices with feature groups; a weight-gradient shape (kernel larger than the output: patches
  // by position, weights packed in 16 x 16 tiles) with batch groups; NHWC with strides and both dilations (the
  // output written through its strides).
  using fx::primitives::convolution_detail::ConvParams;
  auto params = [](std::vector<int64_t> strides, std::vector<int64_t> lo, std::vector<int64_t> hi,
                   std::vector<int64_t> lhs_dil, std::vector<int64_t> rhs_dil, std::vector<int64_t> lhs_spec,
                   std::vector<int64_t> rhs_spec, std::vector<int64_t> out_spec, int64_t fgc, int64_t bgc) {
    ConvParams p;
    p.window_strides = strides, p.padding_lo = lo, p.padding_hi = hi, p.lhs_dilation = lhs_dil;
    p.rhs_dilation = rhs_dil, p.lhs_spec = lhs_spec, p.rhs_spec = rhs_spec, p.out_spec = out_spec;
    p.feature_group_count = fgc, p.batch_group_count = bgc;
    return p;
  };
  struct Case {
    std::vector<int64_t> lhs, rhs;
    ConvParams p;
  };
  const std::vector<Case> cases{
      {{64, 8, 16, 16},
       {8, 4, 3, 3},
       params({1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 1, 2, 3}, {0, 1, 2, 3}, {0, 1, 2, 3}, 2, 1)},
      {{6, 4, 12, 12},
       {6, 32, 12, 12},
       params({1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 0, 2, 3}, {1, 0, 2, 3}, {1, 0, 2, 3}, 1, 2)},
      {{3, 10, 9, 4},
       {3, 3, 4, 5},
       params({2, 1}, {2, 0}, {1, 3}, {1, 2}, {2, 1}, {0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}, 1, 1)},
  };
  const fx::Primitive& conv = fx::primitives::convolution_detail::conv_general_dilated_p();
  uint64_t seed = 20;
  for (const Case& c : cases)
    for (fx::DType dt : {fx::f64, fx::f32}) {
      // Multiples of 1/16: every sum here is exact in f32 too, in any order.
      std::vector<fx::Tensor> in{fx::testing::grid_tensor(fx::Shape(c.lhs), dt, seed++),
                                 fx::testing::grid_tensor(fx::Shape(c.rhs), dt, seed++)};
      fx::Tensor got = fx::eval_primitive(conv, in, c.p, fx::Backend::cpu)[0];
      fx::Tensor want = fx::eval_primitive(conv, in, c.p, fx::Backend::reference)[0];
      CAPTURE(got.aval());
      CHECK(fx::testing::compare_tensors(got, want) == "");
    }
}

TEST_CASE("conv: errors of the op layer name the op and the fix") {
  fx::Tensor x = fx::ones({1, 2, 4, 4}, fx::f32), w = fx::ones({3, 2, 2, 2}, fx::f32);
  CHECK(message_of<fx::ShapeError>([&] {
          fx::conv_general_dilated(x, w, {1, 1}, {{1, 1}});
        }).find("[conv_general_dilated] padding has 1 (low, high) pairs but the convolution has 2 spatial dims") !=
        std::string::npos);
  CHECK(message_of<fx::Error>([&] {
          fx::conv_general_dilated(x, w, {1, 1}, "SAME", {2, 2});
        }).find("padding \"SAME\" is not defined with lhs dilation") != std::string::npos);
  CHECK(message_of<fx::ShapeError>([&] {
          fx::conv_transpose(x, w, {0, 1}, "SAME");
        }).find("[conv_transpose] needs one positive stride per spatial dim") != std::string::npos);
  CHECK(message_of<fx::AxisError>([&] { fx::ConvDimensionNumbers("NCHH", "OIHW", "NCHW"); }).find("repeats a letter") !=
        std::string::npos);
}
