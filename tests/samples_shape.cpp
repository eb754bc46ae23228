// Samples of the shape/movement primitives: broadcast_in_dim reshape transpose squeeze expand_dims.
#include "samples.hpp"

namespace fluxion::testing {
namespace shape_samples {

namespace lax = fluxion::lax;
using Axes = std::vector<int64_t>;

std::string label_of(const char* what, const Shape& in, DType d, const Axes& axes) {
  std::ostringstream os;
  os << AbstractValue{in, d} << " " << what << "=(";
  for (size_t i = 0; i < axes.size(); ++i) os << (i ? "," : "") << axes[i];
  os << ")";
  return os.str();
}

/// The float dtype under test plus i32 and bool: movement is dtype-agnostic.
std::vector<DType> dtypes(DType dt) { return {dt, i32, boolean}; }

std::vector<Sample> broadcast_in_dim_samples(DType dt) {
  struct Case {
    Shape in, out;
    Axes dims;
  };
  const std::vector<Case> cases{
      {{}, {3, 2}, {}},             // rank 0 to a matrix
      {{3}, {2, 3}, {1}},           // new leading dim
      {{3, 1}, {3, 4}, {0, 1}},     // size-1 dim expands
      {{1, 4}, {2, 3, 4}, {1, 2}},  // both
      {{2, 1, 3}, {2, 4, 5, 3}, {0, 1, 3}},
      {{2, 0}, {2, 5, 0}, {0, 2}},        // size-0 dims
      {{2, 3}, {2, 3}, {0, 1}},           // identity
      {{1}, {0}, {0}},                    // size 1 to size 0
      {{5, 1, 7}, {5, 9, 7}, {0, 1, 2}},  // broadcast in the middle
  };
  std::vector<Sample> out;
  uint64_t seed = 100;
  for (DType d : dtypes(dt))
    for (const Case& c : cases)
      out.push_back(Sample{label_of("dims", c.in, d, c.dims) + " -> " + detail::cat(c.out),
                           {random_tensor(c.in, d, seed++)},
                           unary_fn([c](const Tensor& x) { return lax::broadcast_in_dim(x, c.out, c.dims); }),
                           {AbstractValue{c.out, d}}});
  return out;
}

std::vector<Sample> reshape_samples(DType dt) {
  const std::vector<std::pair<Shape, Shape>> cases{{{2, 3}, {3, 2}},    {{}, {1, 1}},        {{1}, {}},
                                                   {{2, 0, 3}, {0, 5}}, {{2, 3, 4}, {4, 6}}, {{2, 3, 4}, {24}},
                                                   {{24}, {2, 3, 4}},   {{0}, {3, 0, 2}}};
  std::vector<Sample> out;
  uint64_t seed = 200;
  for (DType d : dtypes(dt))
    for (const auto& [in, to] : cases)
      out.push_back(Sample{label_of("", in, d, {}) + " -> " + detail::cat(to),
                           {random_tensor(in, d, seed++)},
                           unary_fn([to = to](const Tensor& x) { return lax::reshape(x, to); }),
                           {AbstractValue{to, d}}});
  return out;
}

std::vector<Sample> transpose_samples(DType dt) {
  struct Case {
    Shape in;
    Axes perm;
    Shape out;
  };
  const std::vector<Case> cases{
      {{}, {}, {}},
      {{2, 3}, {1, 0}, {3, 2}},
      {{2, 3}, {0, 1}, {2, 3}},
      {{2, 3, 4}, {2, 0, 1}, {4, 2, 3}},
      {{2, 3, 4}, {0, 2, 1}, {2, 4, 3}},
      {{2, 3, 4}, {1, 0, 2}, {3, 2, 4}},
      {{0, 3}, {1, 0}, {3, 0}},
      {{40, 50}, {1, 0}, {50, 40}},  // tiled plane
      {{3, 40, 33}, {2, 1, 0}, {33, 40, 3}},
      {{3, 17, 9, 33}, {0, 3, 2, 1}, {3, 33, 9, 17}},  // tiled plane inside outer dims
      {{1, 5, 1, 6}, {3, 2, 1, 0}, {6, 1, 5, 1}},
  };
  std::vector<Sample> out;
  uint64_t seed = 300;
  for (DType d : dtypes(dt))
    for (const Case& c : cases)
      out.push_back(Sample{label_of("perm", c.in, d, c.perm),
                           {random_tensor(c.in, d, seed++)},
                           unary_fn([c](const Tensor& x) { return lax::transpose(x, c.perm); }),
                           {AbstractValue{c.out, d}}});
  return out;
}

std::vector<Sample> squeeze_samples(DType dt) {
  struct Case {
    Shape in;
    Axes dims;
    Shape out;
  };
  const std::vector<Case> cases{
      {{1, 3}, {0}, {3}},       {{3, 1, 1}, {1, 2}, {3}}, {{1}, {0}, {}},      {{}, {}, {}},
      {{2, 0, 1}, {2}, {2, 0}}, {{1, 2, 1}, {0, 2}, {2}}, {{3, 1}, {-1}, {3}},  // negative: lax normalises
      {{1, 2, 1}, {2, 0}, {2}},                                                 // unsorted: lax sorts
  };
  std::vector<Sample> out;
  uint64_t seed = 400;
  for (DType d : dtypes(dt))
    for (const Case& c : cases)
      out.push_back(Sample{label_of("dims", c.in, d, c.dims),
                           {random_tensor(c.in, d, seed++)},
                           unary_fn([c](const Tensor& x) { return lax::squeeze(x, c.dims); }),
                           {AbstractValue{c.out, d}}});
  return out;
}

std::vector<Sample> expand_dims_samples(DType dt) {
  struct Case {
    Shape in;
    Axes dims;
    Shape out;
  };
  const std::vector<Case> cases{
      {{}, {0}, {1}},
      {{3}, {0}, {1, 3}},
      {{3}, {1}, {3, 1}},
      {{2, 3}, {0, 3}, {1, 2, 3, 1}},
      {{0, 2}, {1}, {0, 1, 2}},
      {{2, 3}, {-1}, {2, 3, 1}},
      {{2, 3, 4}, {1, 3}, {2, 1, 3, 1, 4}},
      {{}, {0, 1}, {1, 1}},
  };
  std::vector<Sample> out;
  uint64_t seed = 500;
  for (DType d : dtypes(dt))
    for (const Case& c : cases)
      out.push_back(Sample{label_of("dims", c.in, d, c.dims),
                           {random_tensor(c.in, d, seed++)},
                           unary_fn([c](const Tensor& x) { return lax::expand_dims(x, c.dims); }),
                           {AbstractValue{c.out, d}}});
  return out;
}

const bool registered = [] {
  register_samples(
      "broadcast_in_dim",
      {broadcast_in_dim_samples,
       {bad<ShapeError>("size 3 cannot broadcast to 4", "[broadcast_in_dim] operand f32[3] dimension 0 has size 3",
                        [] {
                          lax::broadcast_in_dim(zeros({3}, f32), {2, 4}, {1});
                        }),
        bad<AxisError>("dimensions not increasing",
                       "[broadcast_in_dim] broadcast_dimensions=(1,0) must be strictly increasing",
                       [] {
                         lax::broadcast_in_dim(zeros({2, 2}), {2, 2}, {1, 0});
                       }),
        bad<ShapeError>("one entry per operand dim", "[broadcast_in_dim] broadcast_dimensions=(0,) has 1 entries",
                        [] {
                          lax::broadcast_in_dim(zeros({2, 3}), {2, 3}, {0});
                        }),
        bad<AxisError>("dimension out of range", "[broadcast_in_dim]",
                       [] {
                         lax::broadcast_in_dim(zeros({2}), {2, 3}, {2});
                       }),
        bad<ShapeError>("negative output size", "[broadcast_in_dim] negative dimension -1",
                        [] { lax::broadcast_in_dim(zeros({}), {-1}, {}); })}});
  register_samples(
      "reshape",
      {reshape_samples,
       {bad<ShapeError>("element count changes", "[reshape] cannot reshape f64[2,3] (6 elements) to new_sizes [4]",
                        [] {
                          lax::reshape(zeros({2, 3}), {4});
                        }),
        bad<ShapeError>("negative size", "[reshape] negative dimension -6", [] { lax::reshape(zeros({6}), {-6}); }),
        bad<ShapeError>("rank 0 to two elements", "[reshape]", [] { lax::reshape(zeros({}), {2}); })}});
  register_samples("transpose",
                   {transpose_samples,
                    {bad<AxisError>("not a permutation", "[transpose] permutation=(0,0) is not a permutation",
                                    [] {
                                      lax::transpose(zeros({2, 3}), {0, 0});
                                    }),
                     bad<AxisError>("wrong length", "[transpose] permutation=(0,)",
                                    [] {
                                      lax::transpose(zeros({2, 3}), {0});
                                    }),
                     bad<AxisError>("negative entry", "[transpose]", [] {
                       lax::transpose(zeros({2, 3}), {-1, 0});
                     })}});
  register_samples(
      "squeeze",
      {squeeze_samples,
       {bad<ShapeError>("size is not 1", "[squeeze] cannot squeeze dimension 1 of operand f64[1,3]",
                        [] {
                          lax::squeeze(zeros({1, 3}), {1});
                        }),
        bad<AxisError>("out of range", "[squeeze] axis 2 is out of range for rank 2",
                       [] {
                         lax::squeeze(zeros({1, 1}), {2});
                       }),
        bad<AxisError>("listed twice", "[squeeze] dimensions=(0,0) lists dimension 0 twice",
                       [] {
                         lax::squeeze(zeros({1, 3}), {0, -2});
                       }),
        bad<Error>("empty tensor handle", "[squeeze] an input is an empty", [] { lax::squeeze(Tensor(), {0}); })}});
  register_samples("expand_dims",
                   {expand_dims_samples,
                    {bad<AxisError>("position listed twice", "[expand_dims] dimensions=(1,1) lists position 1 twice",
                                    [] {
                                      lax::expand_dims(zeros({2}), {1, -2});
                                    }),
                     bad<AxisError>("position out of range", "[expand_dims] axis 3 is out of range for rank 2",
                                    [] { lax::expand_dims(zeros({2}), {3}); }),
                     bad<Error>("empty tensor handle", "[expand_dims] an input is an empty",
                                [] { lax::expand_dims(Tensor(), {0}); })}});
  return true;
}();

}  // namespace shape_samples
}  // namespace fluxion::testing
