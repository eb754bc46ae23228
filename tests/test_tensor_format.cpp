// Tensor text (fluxion/tensor_format.hpp) against numpy: every expected string below is numpy 2.4's
// str() of the same values (np.arange(30.0) / 7, ...), so a difference is a departure from numpy.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include <fluxion/fluxion.hpp>
#include <fluxion/tensor_format.hpp>

#include "test_util.hpp"

namespace fx = fluxion;

namespace {
template <class T> std::string str(const T& v) { return fluxion::testing::to_text(v); }
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("tensor text: equals numpy's str() for wrapping, notation, padding and summaries") {
  CHECK(str(fx::arange(30, fx::f64) / 7.0) == R"([0.         0.14285714 0.28571429 0.42857143 0.57142857 0.71428571
 0.85714286 1.         1.14285714 1.28571429 1.42857143 1.57142857
 1.71428571 1.85714286 2.         2.14285714 2.28571429 2.42857143
 2.57142857 2.71428571 2.85714286 3.         3.14285714 3.28571429
 3.42857143 3.57142857 3.71428571 3.85714286 4.         4.14285714])");
  CHECK(str(fx::linspace(-1, 1, 20)) == R"([-1.         -0.89473684 -0.78947368 -0.68421053 -0.57894737 -0.47368421
 -0.36842105 -0.26315789 -0.15789474 -0.05263158  0.05263158  0.15789474
  0.26315789  0.36842105  0.47368421  0.57894737  0.68421053  0.78947368
  0.89473684  1.        ])");
  CHECK(str(fx::reshape(fx::arange(24, fx::f64), {2, 12}) / 3.0) ==
        R"([[0.         0.33333333 0.66666667 1.         1.33333333 1.66666667
  2.         2.33333333 2.66666667 3.         3.33333333 3.66666667]
 [4.         4.33333333 4.66666667 5.         5.33333333 5.66666667
  6.         6.33333333 6.66666667 7.         7.33333333 7.66666667]])");
  CHECK(str(fx::arange(40, fx::i64) * 1000 - 7000) ==
        R"([-7000 -6000 -5000 -4000 -3000 -2000 -1000     0  1000  2000  3000  4000
  5000  6000  7000  8000  9000 10000 11000 12000 13000 14000 15000 16000
 17000 18000 19000 20000 21000 22000 23000 24000 25000 26000 27000 28000
 29000 30000 31000 32000])");
  CHECK(str(fx::remainder(fx::arange(30), 3) == 0) ==
        R"([ True False False  True False False  True False False  True False False
  True False False  True False False  True False False  True False False
  True False False  True False False])");
  CHECK(str(fx::tensor({true, true})) == R"([ True  True])");
  CHECK(str(fx::tensor({1e-9, 1.5, -2.0})) == R"([ 1.0e-09  1.5e+00 -2.0e+00])");
  CHECK(str(fx::tensor({0.001, 2.0})) == R"([1.e-03 2.e+00])");
  CHECK(str(fx::tensor({1e8, 1.0})) == R"([1.e+08 1.e+00])");
  CHECK(str(fx::tensor({1e-100, 1.0})) == R"([1.e-100 1.e+000])");
  CHECK(str(fx::arange(1, 20, 1, fx::f64) * 1.5e-7) ==
        R"([1.50e-07 3.00e-07 4.50e-07 6.00e-07 7.50e-07 9.00e-07 1.05e-06 1.20e-06
 1.35e-06 1.50e-06 1.65e-06 1.80e-06 1.95e-06 2.10e-06 2.25e-06 2.40e-06
 2.55e-06 2.70e-06 2.85e-06])");
  CHECK(str(fx::tensor({10.25, kNaN, -kInf, 1.5})) == R"([10.25   nan  -inf  1.5 ])");
  CHECK(str(fx::tensor({kNaN, kNaN})) == R"([nan nan])");
  CHECK(str(fx::tensor({1e-9, kNaN, kInf})) == R"([1.e-09    nan    inf])");
  CHECK(str(fx::tensor({-0.0, 1.0})) == R"([-0.  1.])");
  CHECK(str(fx::astype(fx::tensor({0.1, 0.3, 1.0 / 3}), fx::f32)) == R"([0.1        0.3        0.33333334])");
  CHECK(str(fx::tensor({{0.5, -12.25}, {3.0, 100.0}})) == R"([[  0.5  -12.25]
 [  3.   100.  ]])");
  CHECK(str(fx::reshape(fx::arange(24), {2, 3, 4})) == R"([[[ 0  1  2  3]
  [ 4  5  6  7]
  [ 8  9 10 11]]

 [[12 13 14 15]
  [16 17 18 19]
  [20 21 22 23]]])");
  CHECK(str(fx::reshape(fx::arange(2000, fx::f64), {40, 50})) ==
        R"([[0.000e+00 1.000e+00 2.000e+00 ... 4.700e+01 4.800e+01 4.900e+01]
 [5.000e+01 5.100e+01 5.200e+01 ... 9.700e+01 9.800e+01 9.900e+01]
 [1.000e+02 1.010e+02 1.020e+02 ... 1.470e+02 1.480e+02 1.490e+02]
 ...
 [1.850e+03 1.851e+03 1.852e+03 ... 1.897e+03 1.898e+03 1.899e+03]
 [1.900e+03 1.901e+03 1.902e+03 ... 1.947e+03 1.948e+03 1.949e+03]
 [1.950e+03 1.951e+03 1.952e+03 ... 1.997e+03 1.998e+03 1.999e+03]])");
  CHECK(str(fx::reshape(fx::arange(3000), {10, 15, 20})) == R"([[[   0    1    2 ...   17   18   19]
  [  20   21   22 ...   37   38   39]
  [  40   41   42 ...   57   58   59]
  ...
  [ 240  241  242 ...  257  258  259]
  [ 260  261  262 ...  277  278  279]
  [ 280  281  282 ...  297  298  299]]

 [[ 300  301  302 ...  317  318  319]
  [ 320  321  322 ...  337  338  339]
  [ 340  341  342 ...  357  358  359]
  ...
  [ 540  541  542 ...  557  558  559]
  [ 560  561  562 ...  577  578  579]
  [ 580  581  582 ...  597  598  599]]

 [[ 600  601  602 ...  617  618  619]
  [ 620  621  622 ...  637  638  639]
  [ 640  641  642 ...  657  658  659]
  ...
  [ 840  841  842 ...  857  858  859]
  [ 860  861  862 ...  877  878  879]
  [ 880  881  882 ...  897  898  899]]

 ...

 [[2100 2101 2102 ... 2117 2118 2119]
  [2120 2121 2122 ... 2137 2138 2139]
  [2140 2141 2142 ... 2157 2158 2159]
  ...
  [2340 2341 2342 ... 2357 2358 2359]
  [2360 2361 2362 ... 2377 2378 2379]
  [2380 2381 2382 ... 2397 2398 2399]]

 [[2400 2401 2402 ... 2417 2418 2419]
  [2420 2421 2422 ... 2437 2438 2439]
  [2440 2441 2442 ... 2457 2458 2459]
  ...
  [2640 2641 2642 ... 2657 2658 2659]
  [2660 2661 2662 ... 2677 2678 2679]
  [2680 2681 2682 ... 2697 2698 2699]]

 [[2700 2701 2702 ... 2717 2718 2719]
  [2720 2721 2722 ... 2737 2738 2739]
  [2740 2741 2742 ... 2757 2758 2759]
  ...
  [2940 2941 2942 ... 2957 2958 2959]
  [2960 2961 2962 ... 2977 2978 2979]
  [2980 2981 2982 ... 2997 2998 2999]]])");
  CHECK(str(fx::reshape(fx::arange(1200, fx::f64) / 7.0, {2, 600})) ==
        R"([[0.00000000e+00 1.42857143e-01 2.85714286e-01 ... 8.52857143e+01
  8.54285714e+01 8.55714286e+01]
 [8.57142857e+01 8.58571429e+01 8.60000000e+01 ... 1.71000000e+02
  1.71142857e+02 1.71285714e+02]])");
}

TEST_CASE("tensor text: a narrower line width wraps sooner, continuation lines under the bracket") {
  const fx::Tensor t = fx::tensor({1.5, 2.5, 3.5, 4.5});
  CHECK(fx::tensor_format::array_text(t, 12) == "[1.5 2.5\n 3.5 4.5]");
  CHECK(fx::tensor_format::array_text(t) == "[1.5 2.5 3.5 4.5]");
  // A word wider than the line still goes on the first line: wrapping never leaves a bare bracket.
  CHECK(fx::tensor_format::array_text(fx::tensor({123456.5}), 4) == "[123456.5]");
}

TEST_CASE("tensor text: elements share one width, so decimal points align") {
  const std::vector<std::string> texts = fx::tensor_format::format_elements(fx::tensor({-1.5, 20.0, kNaN}), {0, 1, 2});
  CHECK(texts == std::vector<std::string>{"-1.5", "20. ", " nan"});
  CHECK(fx::tensor_format::format_elements(fx::arange(12), {0, 11}) == std::vector<std::string>{" 0", "11"});
  // A rank-0 value is not padded.
  CHECK(fx::tensor_format::format_elements(fx::scalar(true), {0}, true) == std::vector<std::string>{"True"});
  CHECK(str(fx::scalar(1e-9)) == "1.e-09");
  CHECK(str(fx::scalar(-kInf)) == "-inf");
}

TEST_CASE("tensor text: half-precision values print as their exact f32 values") {
  CHECK(str(fx::astype(fx::tensor({0.1, 2.0}), fx::f16)) == "[0.09997559 2.        ]");
  CHECK(str(fx::astype(fx::tensor({1.0, -0.5}), fx::bf16)) == "[ 1.  -0.5]");
}
