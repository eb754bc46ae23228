// Samples of conv_general_dilated: 1-d, 2-d and 3-d; strides, asymmetric and negative padding, lhs and rhs
// dilation, feature and batch groups, NHWC/HWIO layouts, a size-0 batch. Operands stay small (a few hundred
// elements) so the rule suite's finite differences stay fast.
#include <sstream>

#include "samples.hpp"

namespace fluxion::testing {
namespace convolution_samples {

using Pads = std::vector<std::pair<int64_t, int64_t>>;

struct Case {
  const char* what;
  Shape lhs, rhs, out;
  std::vector<int64_t> strides;
  Pads padding;
  std::vector<int64_t> lhs_dilation, rhs_dilation;
  ConvDimensionNumbers dn;
  int64_t feature_groups = 1, batch_groups = 1;
};

const std::vector<Case>& cases() {
  // Composition-matrix checks use the first two, so they are the small, typical ones.
  static const std::vector<Case> c{
      {"2-d, NCHW, stride 2, asymmetric padding",
       {2, 2, 5, 4},
       {3, 2, 3, 2},
       {2, 3, 3, 2},
       {2, 2},
       {{1, 1}, {0, 1}},
       {},
       {},
       {}},
      {"1-d, stride 2", {2, 3, 7}, {4, 3, 3}, {2, 4, 4}, {2}, {{1, 2}}, {}, {}, {}},
      {"2-d, lhs and rhs dilation",
       {1, 2, 4, 3},
       {2, 2, 2, 2},
       {1, 2, 6, 3},
       {1, 1},
       {{0, 0}, {1, 1}},
       {2, 1},
       {1, 2},
       {}},
      {"2-d, negative padding", {1, 1, 6, 5}, {2, 1, 2, 2}, {1, 2, 4, 3}, {1, 1}, {{-1, 0}, {1, -2}}, {}, {}, {}},
      {"2-d, feature groups", {2, 4, 4, 4}, {6, 2, 2, 2}, {2, 6, 2, 3}, {2, 1}, {{0, 1}, {0, 0}}, {}, {}, {}, 2},
      {"2-d, batch groups", {4, 2, 4, 3}, {4, 2, 2, 2}, {2, 4, 3, 2}, {1, 1}, {{0, 0}, {0, 0}}, {}, {}, {}, 1, 2},
      {"2-d, NHWC input, HWIO kernel, NCHW output",
       {2, 4, 5, 3},
       {2, 3, 3, 2},
       {2, 2, 4, 5},
       {1, 1},
       {{1, 0}, {1, 1}},
       {},
       {},
       {"NHWC", "HWIO", "NCHW"}},
      {"3-d", {1, 2, 3, 4, 3}, {2, 2, 2, 2, 2}, {1, 2, 3, 2, 4}, {1, 2, 1}, {{1, 0}, {0, 1}, {1, 1}}, {}, {}, {}},
      {"2-d, kernel wider than the output, strided and dilated",
       {1, 2, 4, 7},
       {2, 2, 2, 4},
       {1, 2, 3, 2},
       {1, 2},
       {{0, 0}, {1, 1}},
       {},
       {1, 2},
       {}},
      {"size-0 batch", {0, 2, 4, 4}, {3, 2, 2, 2}, {0, 3, 3, 3}, {1, 1}, {{0, 0}, {0, 0}}, {}, {}, {}},
  };
  return c;
}

std::vector<Sample> samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 3100;
  for (const Case& c : cases()) {
    Tensor lhs = random_tensor(c.lhs, dt, seed++), rhs = random_tensor(c.rhs, dt, seed++);
    std::ostringstream label;
    label << c.what << ": " << lhs.aval() << " * " << rhs.aval();
    out.push_back(Sample{label.str(),
                         {lhs, rhs},
                         binary_fn([c](const Tensor& x, const Tensor& w) {
                           return conv_general_dilated(x, w, c.strides, c.padding, c.lhs_dilation, c.rhs_dilation, c.dn,
                                                       c.feature_groups, c.batch_groups);
                         }),
                         {AbstractValue{c.out, dt}}});
  }
  return out;
}

Tensor conv2d(const Shape& lhs, const Shape& rhs, std::vector<int64_t> strides = {1, 1}, int64_t groups = 1) {
  return conv_general_dilated(ones(lhs, f32), ones(rhs, f32), strides, "VALID", {}, {}, groups);
}

const bool registered = register_samples(
    "conv_general_dilated",
    {samples,
     {bad<ShapeError>("rank mismatch",
                      "[conv_general_dilated] lhs f32[1,2,4,4] and rhs f32[3,2,2] must have the same rank",
                      [] {
                        conv2d({1, 2, 4, 4}, {3, 2, 2}, {1});
                      }),
      bad<ShapeError>("channel mismatch", "so rhs f32[3,3,2,2] needs 2 input features (dim 1), not 3",
                      [] {
                        conv2d({1, 2, 4, 4}, {3, 3, 2, 2});
                      }),
      bad<ShapeError>("groups do not divide the features",
                      "[conv_general_dilated] feature_group_count 2 does not divide the 3 features of lhs f32[1,3,4,4]",
                      [] {
                        conv2d({1, 3, 4, 4}, {2, 1, 2, 2}, {1, 1}, 2);
                      }),
      bad<ShapeError>("groups do not divide the output features",
                      "the 3 output features of rhs f32[3,2,2,2] are not a multiple of the group count 2",
                      [] {
                        conv2d({1, 4, 4, 4}, {3, 2, 2, 2}, {1, 1}, 2);
                      }),
      bad<ShapeError>("negative stride", "[conv_general_dilated] window_strides (1,-1) has an entry -1 below 1",
                      [] {
                        conv2d({1, 2, 4, 4}, {3, 2, 2, 2}, {1, -1});
                      }),
      bad<ShapeError>("strides of the wrong length", "window_strides (1,) has 1 entries but the convolution has 2",
                      [] {
                        conv2d({1, 2, 4, 4}, {3, 2, 2, 2}, {1});
                      }),
      bad<AxisError>("layout missing its feature letter",
                     "[conv_general_dilated] the lhs layout \"NHWX\" must contain 'N' and 'C' exactly once",
                     [] { ConvDimensionNumbers("NHWX", "HWIO", "NHWC"); }),
      bad<AxisError>("layouts with different spatial letters", "must have the same length and the same spatial letters",
                     [] { ConvDimensionNumbers("NHWC", "HDIO", "NHWC"); }),
      bad<AxisError>("layout of the wrong rank", "lhs_spec (0,3,1,2) must list each of the 3 dims",
                     [] {
                       conv_general_dilated(ones({1, 4, 3}, f32), ones({2, 3, 2}, f32), {1}, "VALID", {}, {},
                                            {"NHWC", "HWIO", "NHWC"});
                     }),
      bad<Error>("unknown padding name", "[conv_general_dilated] unknown padding \"FULL\"",
                 [] {
                   conv_general_dilated(ones({1, 2, 4, 4}, f32), ones({3, 2, 2, 2}, f32), {1, 1}, "FULL");
                 }),
      bad<ShapeError>(
          "cropping more than the input", "padding (-3, -2) of spatial dim 0 crops more than the 4 elements of lhs",
          [] {
            conv_general_dilated(ones({1, 2, 4, 4}, f32), ones({3, 2, 2, 2}, f32), {1, 1}, {{-3, -2}, {0, 0}});
          }),
      bad<DTypeError>("integer operands", "[conv_general_dilated] needs floating operands (f32 or f64)", [] {
        conv_general_dilated(ones({1, 2, 4, 4}, i32), ones({3, 2, 2, 2}, i32), {1, 1}, "VALID");
      })}});

}  // namespace convolution_samples
}  // namespace fluxion::testing
