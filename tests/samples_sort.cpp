// Samples of sort: one key along every axis of 1-d to 3-d operands, descending, a key with a
// floating operand carried along, two keys, an argsort-style integer operand, integer and bool keys,
// NaN keys, length-1 and size-0 axes. Then the cumulative primitives along each axis, forward and
// reverse, with integer inputs where they apply. Floating keys are random (distinct), so the sort is smooth
// around them and finite differences apply; samples with ties are marked not differentiable.
#include <cmath>
#include <sstream>

#include "samples.hpp"

namespace fluxion::testing {
namespace sort_samples {

using Operands = std::vector<Tensor>;

Sample sorted(const std::string& what, Operands operands, int64_t axis, int64_t num_keys, bool descending,
              bool differentiable = true) {
  std::ostringstream label;
  label << what << ": axis " << axis << ", " << num_keys << " key(s)" << (descending ? ", descending" : "");
  for (const Tensor& t : operands) label << " " << t.aval();
  std::vector<AbstractValue> expected;
  for (const Tensor& t : operands) expected.push_back(t.aval());
  return Sample{
      label.str(), operands,
      [axis, num_keys, descending](const std::vector<Tensor>& in) { return lax::sort(in, axis, num_keys, descending); },
      expected, differentiable};
}

std::vector<Sample> samples(DType dt) {
  std::vector<Sample> out;
  auto r = [dt](const Shape& s, uint64_t seed) { return random_tensor(s, dt, seed); };
  // The first two are the composition matrix's: small and typical.
  out.push_back(sorted("vector", {r({6}, 1)}, 0, 1, false));
  out.push_back(sorted("matrix rows", {r({3, 5}, 2)}, 1, 1, false));
  out.push_back(sorted("matrix columns", {r({4, 3}, 3)}, 0, 1, false));
  out.push_back(sorted("middle axis", {r({2, 4, 3}, 4)}, 1, 1, false));
  out.push_back(sorted("vector", {r({7}, 5)}, 0, 1, true));
  out.push_back(sorted("matrix columns", {r({5, 2}, 6)}, 0, 1, true));
  out.push_back(sorted("key and value", {r({2, 5}, 7), r({2, 5}, 8)}, 1, 1, false));
  out.push_back(sorted("key and value", {r({5, 3}, 9), r({5, 3}, 10)}, 0, 1, true));
  // Two keys: the first with ties (multiples of 1/2), broken by the second; ties are not smooth.
  Tensor coarse = round(r({8}, 11)) * 0.5;
  out.push_back(sorted("two keys", {coarse, r({8}, 12), r({8}, 13)}, 0, 2, false, false));
  out.push_back(sorted("two keys", {coarse, r({8}, 12)}, 0, 2, true, false));
  out.push_back(sorted("argsort", {r({3, 6}, 14), lax::iota(i32, {3, 6}, 1)}, 1, 1, false));
  out.push_back(sorted("integer key", {random_tensor({9}, i32, 15, -3, 3), r({9}, 16)}, 0, 1, false, false));
  out.push_back(sorted("bool key", {random_tensor({2, 6}, boolean, 17), r({2, 6}, 18)}, 1, 1, false, false));
  out.push_back(
      sorted("NaN and inf keys",
             {astype(from_vector(std::vector<double>{1.0, NAN, -INFINITY, 0.0, -0.0, INFINITY, -NAN, -1.0}, {8}), dt),
              r({8}, 19)},
             0, 1, false, false));
  out.push_back(sorted("length-1 axis", {r({3, 1}, 20)}, 1, 1, false));
  out.push_back(sorted("size-0 axis", {r({2, 0}, 21)}, 1, 1, false));
  out.push_back(sorted("size-0 other axis", {r({0, 4}, 22)}, 1, 1, true));
  return out;
}

void sort_of(const std::vector<Shape>& shapes, int64_t axis, int64_t num_keys) {
  std::vector<Tensor> operands;
  for (const Shape& s : shapes) operands.push_back(zeros(s));
  lax::sort(operands, axis, num_keys);
}

const bool registered = register_samples(
    "sort",
    {samples,
     {bad<ShapeError>("no operands", "[sort] needs at least one operand, got none", [] { sort_of({}, 0, 1); }),
      bad<ShapeError>("zero keys", "[sort] num_keys=0 must be between 1 and the number of operands (1)",
                      [] { sort_of({{3}}, 0, 0); }),
      bad<ShapeError>("more keys than operands", "[sort] num_keys=3 must be between 1 and the number of operands (2)",
                      [] {
                        sort_of({{3}, {3}}, 0, 3);
                      }),
      bad<ShapeError>("shapes differ", "[sort] operand 1 f64[4] does not have the shape of operand 0 f64[3]",
                      [] {
                        sort_of({{3}, {4}}, 0, 1);
                      }),
      bad<AxisError>("rank 0", "[sort] cannot sort a rank-0 operand f64[]", [] { sort_of({{}}, 0, 1); }),
      bad<AxisError>("axis out of range", "[sort] axis 2 is out of range for operand f64[2,3] of rank 2", [] {
        sort_of({{2, 3}}, 2, 1);
      })}});

// ---- cumprod, cummax, cummin, cumlogsumexp ----

using Scan = Tensor (*)(const Tensor&, int64_t, bool);

std::vector<Sample> cumulative_samples(const char* name, Scan op, bool integers, DType dt) {
  std::vector<Sample> out;
  auto add = [&](const std::string& what, const Tensor& x, int64_t axis, bool reverse) {
    std::ostringstream label;
    label << name << " " << what << ": " << x.aval() << " axis " << axis << (reverse ? " reverse" : "");
    out.push_back(Sample{
        label.str(), {x}, unary_fn([op, axis, reverse](const Tensor& v) { return op(v, axis, reverse); }), {x.aval()}});
  };
  auto r = [dt](const Shape& s, uint64_t seed) { return random_tensor(s, dt, seed, -1.5, 1.5); };
  add("vector", r({7}, 30), 0, false);
  add("matrix rows", r({3, 5}, 31), 1, true);
  add("vector", r({8}, 32), 0, true);
  add("matrix columns", r({4, 3}, 33), 0, false);
  add("middle axis", r({2, 5, 2}, 34), 1, false);
  add("length 1", r({3, 1}, 35), 1, false);
  add("size 0", r({0, 3}, 36), 0, true);
  if (integers) add("integers", random_tensor({2, 6}, i32, 37, -3, 3), 1, false);
  return out;
}

template <Scan Op> void register_cumulative(const char* name, bool integers) {
  const std::string n = name;
  register_samples(
      n, {[name, integers](DType dt) { return cumulative_samples(name, Op, integers, dt); },
          {bad<DTypeError>("bool", "[" + n + "] does not take bool[3]", [] { Op(ones({3}, boolean), 0, false); }),
           bad<AxisError>("axis out of range", "[" + n + "] axis 2 is out of range for operand f64[2,3] of rank 2", [] {
             Op(ones({2, 3}), 2, false);
           })}});
}

const bool cumulative_registered = [] {
  register_cumulative<&lax::cumprod>("cumprod", true);
  register_cumulative<&lax::cummax>("cummax", true);
  register_cumulative<&lax::cummin>("cummin", true);
  register_cumulative<&lax::cumlogsumexp>("cumlogsumexp", false);
  return true;
}();

}  // namespace sort_samples
}  // namespace fluxion::testing
