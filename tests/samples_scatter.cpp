// Samples of the scatter family: gather_general (row takes, point gathers, 2x2 windows from a 2-d
// index batch, a batching-dim gather, one index vector, clip and fill modes with in- and
// out-of-range starts, size-0 index batches and slices) and the five scatters on shared cases
// (duplicate indices, overlapping windows, dropped and clipped out-of-range starts, batching dims,
// size-0 updates), plus one i32 sample each for the kernels. Values are random, so min/max see no
// ties and finite differences stay away from switching points.
#include <limits>
#include <sstream>

#include "samples.hpp"

namespace fluxion::testing {
namespace scatter_samples {

using Ints = std::vector<int64_t>;
using Mode = GatherScatterMode;

Tensor idx(std::vector<int32_t> v, const Shape& s) { return from_vector<int32_t>(v, s); }

std::string label(const std::string& what, const std::vector<Tensor>& in) {
  std::ostringstream os;
  os << what << ":";
  for (const Tensor& t : in) os << " " << t.aval();
  return os.str();
}

struct GatherCase {
  std::string what;
  Shape operand;
  Tensor indices;
  lax::GatherDimensionNumbers dn;
  Ints slice_sizes;
  Mode mode;
  std::optional<double> fill;
  Shape out;
};

std::vector<GatherCase> gather_cases() {
  const Mode clip = Mode::clip, fill = Mode::fill_or_drop;
  return {
      {"rows (x[i, :]), clipped",
       {4, 3},
       idx({2, 0, 5, -1}, {4, 1}),
       {{1}, {0}, {0}, {}, {}},
       {1, 3},
       clip,
       {},
       {4, 3}},
      {"points x[i, j] with duplicates",
       {3, 4},
       idx({0, 1, 2, 3, 0, 1, 1, 2}, {4, 2}),
       {{}, {0, 1}, {0, 1}, {}, {}},
       {1, 1},
       clip,
       {},
       {4}},
      {"2x2 windows, 2-d index batch, clipped",
       {4, 5},
       idx({0, 0, 3, 4, 1, 2, -1, 9}, {2, 2, 2}),
       {{2, 3}, {}, {0, 1}, {}, {}},
       {2, 2},
       clip,
       {},
       {2, 2, 2, 2}},
      {"fill mode, fill value 0.5",
       {5, 2},
       idx({1, 7, -1, 4}, {4, 1}),
       {{1}, {0}, {0}, {}, {}},
       {1, 2},
       fill,
       0.5,
       {4, 2}},
      {"fill mode, NaN fill", {5, 2}, idx({3, 5}, {2, 1}), {{1}, {0}, {0}, {}, {}}, {1, 2}, fill, {}, {2, 2}},
      {"batching dims (per-row take)",
       {3, 4, 2},
       idx({0, 3, 1, 1, 2, 0}, {3, 2, 1}),
       {{2}, {1}, {1}, {0}, {0}},
       {1, 1, 2},
       clip,
       {},
       {3, 2, 2}},
      {"one index vector, window 2", {6}, idx({4}, {1}), {{0}, {}, {0}, {}, {}}, {2}, fill, 0.0, {2}},
      {"no index vectors", {4, 3}, idx({}, {0, 1}), {{1}, {0}, {0}, {}, {}}, {1, 3}, clip, {}, {0, 3}},
      {"size-0 slice", {4, 0}, idx({1, 2}, {2, 1}), {{1}, {0}, {0}, {}, {}}, {1, 0}, fill, {}, {2, 0}},
  };
}

std::vector<Sample> gather_samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 3100;
  std::vector<GatherCase> cases = gather_cases();
  for (size_t c = 0; c < cases.size(); ++c) {
    const GatherCase g = cases[c];
    for (DType d : c == 0 ? std::vector<DType>{dt, i32} : std::vector<DType>{dt}) {
      std::vector<Tensor> in{random_tensor(g.operand, d, seed++), g.indices};
      out.push_back(Sample{label(g.what, in),
                           in,
                           binary_fn([g](const Tensor& x, const Tensor& i) {
                             return lax::gather(x, i, g.dn, g.slice_sizes, g.mode, g.fill);
                           }),
                           {AbstractValue{g.out, d}}});
    }
  }
  return out;
}

struct ScatterCase {
  std::string what;
  Shape operand;
  Tensor indices;
  Shape updates;
  lax::ScatterDimensionNumbers dn;
  Mode mode;
};

std::vector<ScatterCase> scatter_cases() {
  const Mode clip = Mode::clip, drop = Mode::fill_or_drop;
  return {
      {"rows with duplicates, out-of-range dropped",
       {5, 3},
       idx({1, 3, 1, 9, -1}, {5, 1}),
       {5, 3},
       {{1}, {0}, {0}, {}, {}},
       drop},
      {"rows, out-of-range clipped", {4, 2}, idx({-2, 3, 8}, {3, 1}), {3, 2}, {{1}, {0}, {0}, {}, {}}, clip},
      {"points with duplicates",
       {3, 4},
       idx({0, 1, 2, 3, 0, 1, 0, 1}, {4, 2}),
       {4},
       {{}, {0, 1}, {0, 1}, {}, {}},
       drop},
      {"overlapping 2x2 windows",
       {4, 4},
       idx({0, 0, 1, 1, 3, 3}, {3, 2}),
       {3, 2, 2},
       {{1, 2}, {}, {0, 1}, {}, {}},
       clip},
      {"batching dims", {2, 5}, idx({4, 0, 4, 2, 2, 7}, {2, 3, 1}), {2, 3}, {{}, {1}, {1}, {0}, {0}}, drop},
      {"no updates", {4, 3}, idx({}, {0, 1}), {0, 3}, {{1}, {0}, {0}, {}, {}}, drop},
  };
}

template <class F> std::function<std::vector<Sample>(DType)> scatter_samples(F scatter_fn, uint64_t seed0) {
  return [scatter_fn, seed0](DType dt) {
    std::vector<Sample> out;
    uint64_t seed = seed0;
    std::vector<ScatterCase> cases = scatter_cases();
    for (size_t c = 0; c < cases.size(); ++c) {
      const ScatterCase s = cases[c];
      for (DType d : c == 0 ? std::vector<DType>{dt, i32} : std::vector<DType>{dt}) {
        std::vector<Tensor> in{random_tensor(s.operand, d, seed), s.indices, random_tensor(s.updates, d, seed + 1)};
        seed += 2;
        out.push_back(Sample{label(s.what, in),
                             in,
                             ternary_fn([s, scatter_fn](const Tensor& x, const Tensor& i, const Tensor& u) {
                               return scatter_fn(x, i, u, s.dn, s.mode);
                             }),
                             {AbstractValue{s.operand, d}}});
      }
    }
    return out;
  };
}

void gather2(const Shape& x, DType xd, const Tensor& i, const lax::GatherDimensionNumbers& dn, const Ints& sizes) {
  lax::gather(ones(x, xd), i, dn, sizes);
}
void scatter1(const Shape& x, DType xd, const Tensor& i, const Shape& u, DType ud,
              const lax::ScatterDimensionNumbers& dn, Mode mode = Mode::fill_or_drop) {
  lax::scatter_add(ones(x, xd), i, ones(u, ud), dn, mode);
}

const lax::GatherDimensionNumbers kRows{{1}, {0}, {0}, {}, {}};
const lax::ScatterDimensionNumbers kRowUpdates{{1}, {0}, {0}, {}, {}};

const bool registered_gather = register_samples(
    "gather_general",
    {gather_samples,
     {bad<DTypeError>("float indices", "[gather_general] indices have type f64[2,1]",
                      [] {
                        gather2({4, 3}, f64, zeros({2, 1}), kRows, {1, 3});
                      }),
      bad<ShapeError>("index vector too long",
                      "hold index vectors of length 2 (their last dim) but start_index_map=(0,)",
                      [] {
                        gather2({4, 3}, f64, idx({0, 1}, {1, 2}), kRows, {1, 3});
                      }),
      bad<ShapeError>("slice larger than the operand", "slice_sizes=(1,4) asks for 4 elements of dim 1",
                      [] {
                        gather2({4, 3}, f64, idx({0}, {1, 1}), kRows, {1, 4});
                      }),
      bad<ShapeError>("collapsed dim with slice size 2",
                      "operand dim 0 is collapsed or batching, so its slice size must be 1",
                      [] {
                        gather2({4, 3}, f64, idx({0}, {1, 1}), kRows, {2, 3});
                      }),
      bad<ShapeError>("offset_dims count", "offset_dims=() has 0 entries but the slice keeps 1 operand dims",
                      [] {
                        gather2({4, 3}, f64, idx({0}, {1, 1}), {{}, {0}, {0}, {}, {}}, {1, 3});
                      }),
      bad<ShapeError>("unsorted collapsed dims", "collapsed_slice_dims=(1,0) must be sorted ascending",
                      [] {
                        gather2({4, 3}, f64, idx({0, 0}, {1, 2}), {{}, {1, 0}, {0, 1}, {}, {}}, {1, 1});
                      }),
      bad<ShapeError>("batching sizes differ", "batching dims differ in size: operand f64[3,4] dim 0 has 3",
                      [] {
                        gather2({3, 4}, f64, idx({0, 1}, {2, 1}), {{}, {1}, {1}, {0}, {0}}, {1, 1});
                      }),
      bad<ShapeError>("dim out of range", "start_index_map=(2,) has entry 2 out of range for the operand (2 dims)",
                      [] {
                        gather2({4, 3}, f64, idx({0}, {1, 1}), {{1}, {0}, {2}, {}, {}}, {1, 3});
                      }),
      bad<DTypeError>("NaN fill of integers", "[gather_general] fill_value nan is not a value of operand i32[4,3]",
                      [] {
                        lax::gather(ones({4, 3}, i32), idx({0}, {1, 1}), kRows, {1, 3}, Mode::fill_or_drop,
                                    std::numeric_limits<double>::quiet_NaN());
                      }),
      bad<ShapeError>("rank-0 indices", "must have rank >= 1: the last dim is the index vector", [] {
        gather2({4}, f64, scalar<int32_t>(1), {{}, {0}, {}, {}, {}}, {1});
      })}});

std::vector<BadInput> scatter_bad(const std::string& nm) {
  return {
      bad<DTypeError>("updates dtype", "[" + nm + "] updates f32[1,3] and operand f64[4,3] have different dtypes",
                      [nm] {
                        const Tensor x = ones({4, 3}), i = idx({0}, {1, 1}), u = ones({1, 3}, f32);
                        if (nm == "scatter") lax::scatter(x, i, u, kRowUpdates);
                        else if (nm == "scatter_mul") lax::scatter_mul(x, i, u, kRowUpdates);
                        else if (nm == "scatter_min") lax::scatter_min(x, i, u, kRowUpdates);
                        else if (nm == "scatter_max") lax::scatter_max(x, i, u, kRowUpdates);
                        else lax::scatter_add(x, i, u, kRowUpdates);
                      }),
      bad<ShapeError>("updates batch size", "pairs with index-batch dim 0 of indices i32[2,1] (2)",
                      [nm] {
                        const Tensor x = ones({4, 3}), i = idx({0, 1}, {2, 1}), u = ones({3, 3});
                        if (nm == "scatter") lax::scatter(x, i, u, kRowUpdates);
                        else if (nm == "scatter_mul") lax::scatter_mul(x, i, u, kRowUpdates);
                        else if (nm == "scatter_min") lax::scatter_min(x, i, u, kRowUpdates);
                        else if (nm == "scatter_max") lax::scatter_max(x, i, u, kRowUpdates);
                        else lax::scatter_add(x, i, u, kRowUpdates);
                      }),
  };
}

const bool registered_scatter = register_samples(
    "scatter", {scatter_samples([](auto&&... a) { return lax::scatter(a...); }, 3200), scatter_bad("scatter")});
const bool registered_mul = register_samples(
    "scatter_mul",
    {scatter_samples([](auto&&... a) { return lax::scatter_mul(a...); }, 3300), scatter_bad("scatter_mul")});
const bool registered_min = register_samples(
    "scatter_min",
    {scatter_samples([](auto&&... a) { return lax::scatter_min(a...); }, 3400), scatter_bad("scatter_min")});
const bool registered_max = register_samples(
    "scatter_max",
    {scatter_samples([](auto&&... a) { return lax::scatter_max(a...); }, 3500), scatter_bad("scatter_max")});

std::vector<BadInput> scatter_add_bad() {
  std::vector<BadInput> b = scatter_bad("scatter_add_general");
  b.push_back(bad<ShapeError>("window larger than the operand", "dim 1 is a window of 4 elements along operand", [] {
    scatter1({4, 3}, f64, idx({0}, {1, 1}), {1, 4}, f64, kRowUpdates);
  }));
  b.push_back(bad<ShapeError>("updates rank", "updates f64[3] must have rank 2", [] {
    scatter1({4, 3}, f64, idx({0}, {1, 1}), {3}, f64, kRowUpdates);
  }));
  b.push_back(bad<DTypeError>("bool operand", "[scatter_add_general] got an operand of type bool[4,3]", [] {
    scatter1({4, 3}, boolean, idx({0}, {1, 1}), {1, 3}, boolean, kRowUpdates);
  }));
  b.push_back(bad<ShapeError>("clip into an empty dim", "is empty, so clip mode has nowhere to put updates", [] {
    scatter1({0, 3}, f64, idx({0}, {1, 1}), {1, 3}, f64, kRowUpdates, Mode::clip);
  }));
  return b;
}

const bool registered_add =
    register_samples("scatter_add_general",
                     {scatter_samples([](auto&&... a) { return lax::scatter_add(a...); }, 3600), scatter_add_bad()});

}  // namespace scatter_samples
}  // namespace fluxion::testing
