// Samples of the random family's primitives: threefry2x32 (i64 words of one shape, rank-0 keys
// broadcast, size 0), erf_inv (f32/f64 in [-0.7, 0.7], where the rule suite's scaled vmap copies
// stay inside (-1, 1)), fma (one shape, rank-0 operands broadcast, size 0), and permute_by_keys
// (floating values by i64 keys along the last axis, with tied keys, several leading axes, size 0).
#include <sstream>

#include "primitives/random.hpp"
#include "samples.hpp"

namespace fluxion::testing {
namespace random_samples {

namespace prims = primitives::random_detail;

/// i64 words in [0, 2^32) of `shape`, deterministic in `seed`.
Tensor words(const Shape& shape, uint64_t seed) { return random_tensor(shape, i64, seed, 0.0, 4294967295.0); }

std::vector<Tensor> threefry(const std::vector<Tensor>& in) {
  return bind(prims::threefry2x32_p(), {in[0], in[1], in[2], in[3]});
}

std::vector<Sample> threefry_samples(DType) {
  std::vector<Sample> out;
  uint64_t seed = 3100;
  struct Case {
    const char* what;
    Shape key, counter;
  };
  const Case cases[] = {{"rank-0 key, counters [5]", {}, {5}},
                        {"per-element keys [2,3]", {2, 3}, {2, 3}},
                        {"all rank 0", {}, {}},
                        {"size-0 counters", {}, {0}}};
  for (const Case& c : cases) {
    std::vector<Tensor> in{words(c.key, seed), words(c.key, seed + 1), words(c.counter, seed + 2),
                           words(c.counter, seed + 3)};
    seed += 4;
    const Shape shape = c.counter.size() > 0 ? c.counter : c.key;
    out.push_back(Sample{
        std::string("threefry2x32: ") + c.what, in, threefry, {AbstractValue{shape, i64}, AbstractValue{shape, i64}}});
  }
  return out;
}

std::vector<Sample> erf_inv_samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 3200;
  for (const Shape& s : {Shape{}, Shape{5}, Shape{2, 3}, Shape{0}}) {
    Tensor x = random_tensor(s, dt, seed++, -0.7, 0.7);
    std::ostringstream label;
    label << "erf_inv " << x.aval();
    out.push_back(
        Sample{label.str(), {x}, unary_fn([](const Tensor& v) { return lax::erf_inv(v); }), {AbstractValue{s, dt}}});
  }
  return out;
}

std::vector<Sample> permute_samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 3300;
  auto permute = binary_fn([](const Tensor& k, const Tensor& v) { return bind1(prims::permute_by_keys_p(), {k, v}); });
  for (const Shape& s : {Shape{5}, Shape{3, 4}, Shape{2, 2, 3}, Shape{2, 0}}) {
    Tensor keys = words(s, seed++);
    Tensor values = random_tensor(s, dt, seed++);
    std::ostringstream label;
    label << "permute_by_keys " << values.aval();
    out.push_back(Sample{label.str(), {keys, values}, permute, {AbstractValue{s, dt}}});
  }
  // Ties: keys 0..2 repeated, so equal keys must keep their order (a stable sort).
  Tensor tied = from_vector(std::vector<int64_t>{2, 0, 1, 0, 2, 1, 0}, Shape{7});
  out.push_back(Sample{"permute_by_keys with tied keys",
                       {tied, random_tensor({7}, dt, seed++)},
                       permute,
                       {AbstractValue{Shape{7}, dt}}});
  return out;
}

std::vector<Sample> fma_samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 3400;
  auto fma = ternary_fn([](const Tensor& a, const Tensor& b, const Tensor& c) {
    return bind1(prims::fma_p(), {a, b, c});
  });
  struct Case {
    Shape a, b, c;
  };
  const Case cases[] = {{{5}, {5}, {5}}, {{2, 3}, {2, 3}, {2, 3}}, {{}, {}, {}}, {{4}, {}, {}}, {{}, {3}, {}},
                        {{}, {}, {3}},   {{0}, {0}, {0}}};
  for (const Case& c : cases) {
    std::vector<Tensor> in{random_tensor(c.a, dt, seed), random_tensor(c.b, dt, seed + 1),
                           random_tensor(c.c, dt, seed + 2)};
    seed += 3;
    Shape shape = c.a.size() ? c.a : c.b.size() ? c.b : c.c;
    std::ostringstream label;
    label << "fma " << in[0].aval() << " " << in[1].aval() << " " << in[2].aval();
    out.push_back(Sample{label.str(), in, fma, {AbstractValue{shape, dt}}});
  }
  return out;
}

Tensor i64s(const Shape& s) { return zeros(s, i64); }

const bool registered_threefry = register_samples(
    "threefry2x32",
    {threefry_samples,
     {bad<DTypeError>("float key", "[threefry2x32] operand k0 is f32[2]",
                      [] {
                        bind(prims::threefry2x32_p(), {zeros({2}, f32), i64s({2}), i64s({2}), i64s({2})});
                      }),
      bad<ShapeError>("counter shapes differ", "[threefry2x32] operand shapes differ: x1 is i64[3]",
                      [] {
                        bind(prims::threefry2x32_p(), {i64s({}), i64s({}), i64s({2}), i64s({3})});
                      }),
      bad<ShapeError>("three operands", "[threefry2x32] takes 4 operand(s), got 3", [] {
        bind(prims::threefry2x32_p(), {i64s({}), i64s({}), i64s({2})});
      })}});

const bool registered_erf_inv =
    register_samples("erf_inv", {erf_inv_samples,
                                 {bad<DTypeError>("integer operand", "[erf_inv] got an operand of type i32[3]",
                                                  [] { lax::erf_inv(zeros({3}, i32)); }),
                                  bad<DTypeError>("bool operand", "[erf_inv] got an operand of type bool[]",
                                                  [] { lax::erf_inv(full(Shape{}, true, boolean)); })}});

const bool registered_fma = register_samples(
    "fma", {fma_samples,
            {bad<DTypeError>("integer operands", "[fma] got an operand of type i32[2]",
                             [] {
                               bind1(prims::fma_p(), {zeros({2}, i32), zeros({2}, i32), zeros({2}, i32)});
                             }),
             bad<DTypeError>("mixed dtypes", "[fma] operand dtypes differ: f32[2] and f64[2]",
                             [] {
                               bind1(prims::fma_p(), {zeros({2}, f32), zeros({2}), zeros({2})});
                             }),
             bad<ShapeError>("shapes differ", "[fma] shapes f64[2] and f64[3] differ", [] {
               bind1(prims::fma_p(), {zeros({2}), zeros({2}), zeros({3})});
             })}});

const bool registered_permute = register_samples(
    "permute_by_keys",
    {permute_samples,
     {bad<DTypeError>("float keys", "[permute_by_keys] keys must be i64, got f64[3]",
                      [] {
                        bind1(prims::permute_by_keys_p(), {zeros({3}), zeros({3})});
                      }),
      bad<ShapeError>("one key per value", "[permute_by_keys] keys i64[4] and values f64[3] must have the same shape",
                      [] {
                        bind1(prims::permute_by_keys_p(), {i64s({4}), zeros({3})});
                      }),
      bad<ShapeError>("scalar values", "[permute_by_keys] values must have at least one axis", [] {
        bind1(prims::permute_by_keys_p(), {i64s({}), zeros({})});
      })}});

}  // namespace random_samples
}  // namespace fluxion::testing
