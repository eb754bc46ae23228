// Samples of the indexing primitives: slice dynamic_slice dynamic_update_slice pad concatenate iota
// gather scatter_add.
#include "samples.hpp"

namespace fluxion::testing {
namespace indexing_samples {

namespace lax = fluxion::lax;
using Ints = std::vector<int64_t>;
using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// The float dtype under test plus i32 and bool: indexing is dtype-agnostic.
std::vector<DType> dtypes(DType dt) { return {dt, i32, boolean}; }

std::string ints(const Ints& v) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  return os.str() + ")";
}

std::string aval(const Shape& s, DType d) { return detail::cat(AbstractValue{s, d}); }

/// A rank-0 start index of the given integer dtype.
Tensor start(int64_t v, DType d = i32) {
  return d == i32 ? scalar<int32_t>(static_cast<int32_t>(v)) : scalar<int64_t>(v);
}

std::vector<Sample> slice_samples(DType dt) {
  struct Case {
    Shape in;
    Ints start, limit, strides;
    Shape out;
  };
  const std::vector<Case> cases{
      {{5}, {1}, {4}, {}, {3}},
      {{10}, {1}, {9}, {3}, {3}},  // strided: 1,4,7
      {{4, 6}, {1, 0}, {3, 6}, {1, 2}, {2, 3}},
      {{3, 4, 5}, {0, 1, 2}, {3, 4, 5}, {2, 1, 2}, {2, 3, 2}},
      {{5}, {2}, {2}, {}, {0}},  // empty slice
      {{2, 0, 3}, {0, 0, 1}, {2, 0, 3}, {}, {2, 0, 2}},
      {{}, {}, {}, {}, {}},
      {{7}, {0}, {7}, {10}, {1}},                // stride past the end
      {{6, 7}, {0, 0}, {6, 7}, {1, 1}, {6, 7}},  // identity
      {{4, 5, 6}, {1, 1, 0}, {3, 4, 6}, {1, 1, 1}, {2, 3, 6}},
  };
  std::vector<Sample> out;
  uint64_t seed = 1000;
  for (DType d : dtypes(dt))
    for (const Case& c : cases)
      out.push_back(Sample{aval(c.in, d) + " " + ints(c.start) + ":" + ints(c.limit) + ":" + ints(c.strides),
                           {random_tensor(c.in, d, seed++)},
                           unary_fn([c](const Tensor& x) { return lax::slice(x, c.start, c.limit, c.strides); }),
                           {AbstractValue{c.out, d}}});
  return out;
}

std::vector<Sample> dynamic_slice_samples(DType dt) {
  struct Case {
    Shape in;
    std::vector<Tensor> starts;
    Ints sizes;
    std::string note;
  };
  const std::vector<Case> cases{
      {{5}, {start(1)}, {3}, "in range"},
      {{5}, {start(4)}, {3}, "start clamped down to 2"},
      {{5}, {start(-3, i64)}, {3}, "negative start clamped to 0"},
      {{4, 6}, {start(1), start(5, i64)}, {2, 3}, "mixed index dtypes, column clamped"},
      {{3, 4, 5}, {start(2), start(-1), start(1)}, {2, 4, 3}, "rank 3"},
      {{}, {}, {}, "rank 0"},
      {{5}, {start(9)}, {0}, "size-0 slice"},
      {{2, 0}, {start(1), start(0)}, {1, 0}, "size-0 operand dim"},
      {{8, 9}, {start(100), start(-100)}, {8, 9}, "full window, any start"},
  };
  std::vector<Sample> out;
  uint64_t seed = 1100;
  for (DType d : dtypes(dt))
    for (const Case& c : cases) {
      std::vector<Tensor> in{random_tensor(c.in, d, seed++)};
      in.insert(in.end(), c.starts.begin(), c.starts.end());
      Ints sizes = c.sizes;
      Fn fn = [sizes](const std::vector<Tensor>& v) {
        return std::vector<Tensor>{lax::dynamic_slice(v[0], std::vector<Tensor>(v.begin() + 1, v.end()), sizes)};
      };
      out.push_back(Sample{aval(c.in, d) + " " + c.note, in, fn, {AbstractValue{Shape(c.sizes), d}}});
    }
  return out;
}

std::vector<Sample> dynamic_update_slice_samples(DType dt) {
  struct Case {
    Shape in, update;
    std::vector<Tensor> starts;
    std::string note;
  };
  const std::vector<Case> cases{
      {{5}, {2}, {start(1)}, "in range"},
      {{5}, {2}, {start(4)}, "start clamped to 3"},
      {{4, 6}, {2, 3}, {start(-1, i64), start(5)}, "both starts clamped"},
      {{3, 4, 5}, {2, 2, 5}, {start(1), start(1), start(0)}, "rank 3"},
      {{}, {}, {}, "rank 0"},
      {{4, 3}, {0, 3}, {start(2), start(0)}, "empty update"},
      {{4, 3}, {4, 3}, {start(7), start(-7)}, "update covers the operand"},
  };
  std::vector<Sample> out;
  uint64_t seed = 1200;
  for (DType d : dtypes(dt))
    for (const Case& c : cases) {
      std::vector<Tensor> in{random_tensor(c.in, d, seed++), random_tensor(c.update, d, seed++)};
      in.insert(in.end(), c.starts.begin(), c.starts.end());
      Fn fn = [](const std::vector<Tensor>& v) {
        return std::vector<Tensor>{lax::dynamic_update_slice(v[0], v[1], std::vector<Tensor>(v.begin() + 2, v.end()))};
      };
      out.push_back(
          Sample{aval(c.in, d) + " <- " + aval(c.update, d) + " " + c.note, in, fn, {AbstractValue{c.in, d}}});
    }
  return out;
}

std::vector<Sample> pad_samples(DType dt) {
  struct Case {
    Shape in;
    Ints low, high, interior;
    Shape out;
  };
  const std::vector<Case> cases{
      {{3}, {1}, {2}, {0}, {6}},
      {{3}, {0}, {0}, {2}, {7}},    // interior
      {{5}, {-2}, {1}, {0}, {4}},   // negative low crops
      {{4}, {-1}, {-2}, {1}, {4}},  // crop both ends of a dilated operand
      {{2, 3}, {1, -1}, {0, 2}, {1, 0}, {4, 4}},
      {{}, {}, {}, {}, {}},                                      // rank 0
      {{0, 2}, {1, 0}, {1, 0}, {3, 0}, {2, 2}},                  // size-0 dim with interior
      {{3}, {-3}, {0}, {0}, {0}},                                // cropped to nothing
      {{2, 3, 4}, {1, 0, 2}, {0, 1, -1}, {1, 2, 0}, {4, 8, 5}},  // rank 3
      {{3, 4}, {-1, 0}, {-1, 0}, {0, 0}, {1, 4}},                // pure crop (no padding element survives)
      {{2}, {-3}, {4}, {3}, {6}},                                // crop into the interior padding
  };
  std::vector<Sample> out;
  uint64_t seed = 1300;
  for (DType d : dtypes(dt))
    for (const Case& c : cases)
      out.push_back(
          Sample{aval(c.in, d) + " low" + ints(c.low) + " high" + ints(c.high) + " interior" + ints(c.interior),
                 {random_tensor(c.in, d, seed++), random_tensor({}, d, seed++, 5, 9)},
                 binary_fn([c](const Tensor& x, const Tensor& v) { return lax::pad(x, v, c.low, c.high, c.interior); }),
                 {AbstractValue{c.out, d}}});
  return out;
}

std::vector<Sample> concatenate_samples(DType dt) {
  struct Case {
    std::vector<Shape> ins;
    int64_t dim;
    Shape out;
  };
  const std::vector<Case> cases{
      {{{2}, {3}}, 0, {5}},
      {{{2, 3}, {2, 1}, {2, 0}}, 1, {2, 4}},
      {{{2, 3, 4}, {2, 1, 4}, {2, 5, 4}}, 1, {2, 9, 4}},
      {{{2, 3, 4}, {2, 3, 1}}, 2, {2, 3, 5}},
      {{{4, 2}}, 0, {4, 2}},  // one operand
      {{{0, 3}, {2, 3}}, 0, {2, 3}},
      {{{0, 3}, {0, 3}}, 0, {0, 3}},
      {{{3, 2}, {3, 5}}, -1, {3, 7}},  // negative dimension: lax normalises
  };
  std::vector<Sample> out;
  uint64_t seed = 1400;
  for (DType d : dtypes(dt))
    for (const Case& c : cases) {
      std::vector<Tensor> in;
      std::string label;
      for (const Shape& s : c.ins) {
        in.push_back(random_tensor(s, d, seed++));
        label += aval(s, d) + " ";
      }
      const int64_t dim = c.dim;
      Fn fn = [dim](const std::vector<Tensor>& v) { return std::vector<Tensor>{lax::concatenate(v, dim)}; };
      out.push_back(Sample{label + "dim " + std::to_string(dim), in, fn, {AbstractValue{c.out, d}}});
    }
  return out;
}

// iota takes no inputs; each sample still passes one floating input that fn ignores, so the rule
// suites (which map and differentiate over the inputs) see iota inside a vmapped or differentiated
// function: its result is unmapped there and its tangent zero.
std::vector<Sample> iota_samples(DType dt) {
  const std::vector<std::pair<Shape, int64_t>> cases{{{5}, 0},    {{2, 3}, 1}, {{2, 3}, 0},    {{2, 3, 4}, 1},
                                                     {{0, 3}, 0}, {{3, 0}, 0}, {{2, 3, 4}, -1}};
  std::vector<Sample> out;
  uint64_t seed = 1450;
  for (DType d : {dt, i32, i64})
    for (const auto& [shape, dim] : cases) {
      Fn fn = [d = d, shape = shape, dim = dim](const std::vector<Tensor>&) {
        return std::vector<Tensor>{lax::iota(d, shape, dim)};
      };
      out.push_back(Sample{aval(shape, d) + " dimension " + std::to_string(dim) + " (input unused)",
                           {random_tensor({2}, dt, seed++)},
                           fn,
                           {AbstractValue{shape, d}}});
    }
  return out;
}

struct GatherCase {
  Shape x;
  Tensor indices;
  int64_t axis;
  Shape out;
  std::string note;
};

std::vector<GatherCase> gather_cases() {
  return {
      {{5}, from_vector<int32_t>({4, 0, 2}), 0, {3}, "1-d"},
      {{4, 3}, from_vector<int32_t>({0, 3, 3, 1}, {2, 2}), 0, {2, 2, 3}, "2-d indices"},
      {{3, 4}, from_vector<int64_t>({1, -2, 7, 3, 0, 9}, {2, 3}), 1, {3, 2, 3}, "out-of-range, i64"},
      {{4, 3}, scalar<int32_t>(2), 1, {4}, "rank-0 index"},
      {{2, 3, 4}, from_vector<int32_t>({3, 3, 0, -1, 5}), 2, {2, 3, 5}, "rank 3, last axis"},
      {{2, 3, 4}, from_vector<int32_t>({2, 0, 1, 1}, {2, 2}), 1, {2, 2, 2, 4}, "rank 3, middle axis"},
      {{4, 3}, from_vector<int32_t>({}, {0}), 0, {0, 3}, "no indices"},
      {{0, 3}, from_vector<int32_t>({1, 2}), 1, {0, 2}, "size-0 dim elsewhere"},
      {{0, 3}, from_vector<int32_t>({}, {0, 2}), 0, {0, 2, 3}, "size-0 axis, empty indices"},
      {{6, 5}, from_vector<int32_t>({5, 4, 3, 2, 1, 0, -1}), -2, {7, 5}, "negative axis: lax normalises"},
  };
}

std::vector<Sample> gather_samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 1500;
  for (DType d : dtypes(dt))
    for (const GatherCase& c : gather_cases()) {
      const int64_t axis = c.axis;
      out.push_back(Sample{aval(c.x, d) + " " + c.note,
                           {random_tensor(c.x, d, seed++), c.indices},
                           binary_fn([axis](const Tensor& x, const Tensor& i) { return lax::gather(x, i, axis); }),
                           {AbstractValue{c.out, d}}});
    }
  return out;
}

std::vector<Sample> scatter_add_samples(DType dt) {
  std::vector<GatherCase> cases = gather_cases();
  cases.push_back({{5}, from_vector<int32_t>({1, 1, 3, 1, 9, 4}), 0, {6}, "duplicate indices accumulate"});
  cases.push_back({{4, 3}, from_vector<int64_t>({2, 2, 2, 0}, {2, 2}), 0, {2, 2, 3}, "duplicates, 2-d indices"});
  std::vector<Sample> out;
  uint64_t seed = 1600;
  for (DType d : {dt, i32})
    for (const GatherCase& c : cases) {
      const int64_t axis = c.axis;
      out.push_back(Sample{aval(c.x, d) + " " + c.note,
                           {random_tensor(c.x, d, seed++), c.indices, random_tensor(c.out, d, seed++)},
                           ternary_fn([axis](const Tensor& x, const Tensor& i, const Tensor& u) {
                             return lax::scatter_add(x, i, u, axis);
                           }),
                           {AbstractValue{c.x, d}}});
    }
  return out;
}

const bool registered = [] {
  register_samples(
      "slice",
      {slice_samples,
       {bad<ShapeError>("limit past the end", "[slice] start_indices=(0,) limit_indices=(6,) are out of bounds",
                        [] { lax::slice(zeros({5}), {0}, {6}); }),
        bad<ShapeError>("start after limit", "need 0 <= start (3) <= limit (2)",
                        [] { lax::slice(zeros({5}), {3}, {2}); }),
        bad<ShapeError>("zero stride", "[slice] strides=(0,) has stride 0",
                        [] { lax::slice(zeros({5}), {0}, {5}, {0}); }),
        bad<ShapeError>("wrong number of starts", "[slice] start_indices=(0,) has 1 entries for operand f64[2,2]", [] {
          lax::slice(zeros({2, 2}), {0}, {1, 1});
        })}});
  register_samples("dynamic_slice",
                   {dynamic_slice_samples,
                    {bad<ShapeError>("size larger than the dim", "[dynamic_slice] slice_sizes=(6,) asks for 6 elements",
                                     [] { lax::dynamic_slice(zeros({5}), {scalar<int32_t>(0)}, {6}); }),
                     bad<DTypeError>("float start index", "[dynamic_slice] start index 0 has type f64[]",
                                     [] { lax::dynamic_slice(zeros({5}), {scalar<double>(1)}, {2}); }),
                     bad<ShapeError>("missing start index", "[dynamic_slice] got 1 start indices for operand f64[2,2]",
                                     [] {
                                       lax::dynamic_slice(zeros({2, 2}), {scalar<int32_t>(0)}, {1, 1});
                                     }),
                     bad<ShapeError>("non-scalar start index", "must be a rank-0 scalar",
                                     [] { lax::dynamic_slice(zeros({5}), {from_vector<int32_t>({1})}, {2}); })}});
  register_samples(
      "dynamic_update_slice",
      {dynamic_update_slice_samples,
       {bad<ShapeError>("update larger than operand",
                        "[dynamic_update_slice] update f64[6] is larger than operand f64[5]",
                        [] { lax::dynamic_update_slice(zeros({5}), zeros({6}), {scalar<int32_t>(0)}); }),
        bad<DTypeError>("dtype mismatch",
                        "[dynamic_update_slice] update f32[2] and operand f64[5] have different dtypes",
                        [] { lax::dynamic_update_slice(zeros({5}), zeros({2}, f32), {scalar<int32_t>(0)}); }),
        bad<ShapeError>("rank mismatch", "[dynamic_update_slice] update f64[2,1] has rank 2",
                        [] {
                          lax::dynamic_update_slice(zeros({5}), zeros({2, 1}), {scalar<int32_t>(0)});
                        }),
        bad<ShapeError>("missing start index", "[dynamic_update_slice] got 0 start indices",
                        [] { lax::dynamic_update_slice(zeros({5}), zeros({2}), {}); })}});
  register_samples(
      "pad",
      {pad_samples,
       {bad<ShapeError>("negative interior", "[pad] interior=(-1,) is negative in dimension 0",
                        [] { lax::pad(zeros({3}), scalar<double>(0), {0}, {0}, {-1}); }),
        bad<ShapeError>("padding value not rank 0", "[pad] padding value has type f64[1]",
                        [] { lax::pad(zeros({3}), zeros({1}), {0}, {0}, {0}); }),
        bad<DTypeError>("padding value dtype", "[pad] padding value f32[] and operand f64[3] have different dtypes",
                        [] { lax::pad(zeros({3}), scalar<float>(0), {0}, {0}, {0}); }),
        bad<ShapeError>("cropping more than the dim", "[pad] low=(-2,) high=(-2,) crop more than dimension 0",
                        [] { lax::pad(zeros({3}), scalar<double>(0), {-2}, {-2}, {0}); }),
        bad<ShapeError>("wrong number of entries", "[pad] high=() has 0 entries",
                        [] { lax::pad(zeros({3}), scalar<double>(0), {1}, {}, {0}); })}});
  register_samples(
      "concatenate",
      {concatenate_samples,
       {bad<DTypeError>("dtype mismatch", "[concatenate] operand 1 is f32[2] but operand 0 is f64[3]",
                        [] {
                          lax::concatenate({zeros({3}), zeros({2}, f32)}, 0);
                        }),
        bad<ShapeError>("shape mismatch off the dimension", "shapes must agree except in dimension 0",
                        [] {
                          lax::concatenate({zeros({3, 2}), zeros({3, 4})}, 0);
                        }),
        bad<ShapeError>("no operands", "[concatenate] takes at least one operand", [] { lax::concatenate({}, 0); }),
        bad<AxisError>("dimension out of range", "[concatenate] dimension=2 is out of range for f64[3,2]",
                       [] {
                         lax::concatenate({zeros({3, 2})}, 2);
                       }),
        bad<AxisError>("rank-0 operands", "[concatenate]", [] {
          lax::concatenate({zeros({}), zeros({})}, 0);
        })}});
  register_samples(
      "iota", {iota_samples,
               {bad<AxisError>("dimension out of range", "[iota] dimension=2 is out of range for i32[2,3]",
                               [] {
                                 lax::iota(i32, {2, 3}, 2);
                               }),
                bad<DTypeError>("bool dtype", "[iota] dtype=bool is not supported", [] { lax::iota(boolean, {3}, 0); }),
                bad<ShapeError>("negative size", "[iota] negative dimension -3", [] { lax::iota(f32, {-3}, 0); }),
                bad<AxisError>("rank 0", "[iota]", [] { lax::iota(f32, {}, 0); })}});
  register_samples(
      "gather",
      {gather_samples,
       {bad<DTypeError>("float indices", "[gather] indices have type f64[2]",
                        [] { lax::gather(zeros({3}), zeros({2}), 0); }),
        bad<AxisError>("axis out of range", "[gather] axis=1 is out of range for f64[3]",
                       [] { lax::gather(zeros({3}), from_vector<int32_t>({0}), 1); }),
        bad<ShapeError>("indexing an empty axis", "[gather] cannot index axis 0 of f64[0,2]: it has size 0", [] {
          lax::gather(zeros({0, 2}), from_vector<int32_t>({0}), 0);
        })}});
  register_samples(
      "scatter_add",
      {scatter_add_samples,
       {bad<ShapeError>("updates shaped wrong", "[scatter_add] updates have shape [3] but operand f64[5]",
                        [] {
                          lax::scatter_add(zeros({5}), from_vector<int32_t>({0, 1}), zeros({3}), 0);
                        }),
        bad<DTypeError>(
            "bool operand", "[scatter_add] got an operand of type bool[5]",
            [] { lax::scatter_add(zeros({5}, boolean), from_vector<int32_t>({0}), zeros({1}, boolean), 0); }),
        bad<DTypeError>("updates dtype", "[scatter_add] updates f32[1] and operand f64[5] have different dtypes",
                        [] { lax::scatter_add(zeros({5}), from_vector<int32_t>({0}), zeros({1}, f32), 0); }),
        bad<ShapeError>("indexing an empty axis", "[scatter_add] cannot index axis 0",
                        [] { lax::scatter_add(zeros({0}), from_vector<int32_t>({0}), zeros({1}), 0); })}});
  return true;
}();

}  // namespace indexing_samples
}  // namespace fluxion::testing
