// Samples of dot_general: matrix-matrix (every transposed layout), matrix-vector, vector-vector,
// outer products, batched (leading, non-leading and reordered batch dims), several contracting
// dims in either pair order, and size-0 contracting / free / batch dims.
//
// Tolerances: the reference accumulates in long double and rounds once, the CPU kernel is Eigen's
// GEMM in the element type. Short contractions (K <= 8) use random values in [-2, 2]; longer
// ones use values on a 1/16 grid, whose products and sums are exact in f32 and f64 in any order,
// so they check the indexing exactly instead of the rounding.
#include <cmath>

#include "samples.hpp"

namespace fluxion::testing {
namespace dot_general_samples {

namespace lax = fluxion::lax;
using Axes = std::vector<int64_t>;

struct Case {
  const char* what;
  Shape lhs, rhs;
  AxisPair contract, batch;
  Shape out;  // hand-written expected output shape
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c{
      {"matmul", {3, 4}, {4, 5}, {{1}, {0}}, {}, {3, 5}},
      {"matmul, lhs transposed", {4, 3}, {4, 5}, {{0}, {0}}, {}, {3, 5}},
      {"matmul, rhs transposed", {3, 4}, {5, 4}, {{1}, {1}}, {}, {3, 5}},
      {"matmul, both transposed", {4, 3}, {5, 4}, {{0}, {1}}, {}, {3, 5}},
      {"matrix-vector", {3, 4}, {4}, {{1}, {0}}, {}, {3}},
      {"transposed matrix-vector", {4, 3}, {4}, {{0}, {0}}, {}, {3}},
      {"vector-matrix", {4}, {4, 5}, {{0}, {0}}, {}, {5}},
      {"vector-transposed matrix", {4}, {5, 4}, {{0}, {1}}, {}, {5}},
      {"vector-vector", {6}, {6}, {{0}, {0}}, {}, {}},
      {"outer product", {3}, {4}, {}, {}, {3, 4}},
      {"scalar times matrix", {}, {3, 2}, {}, {}, {3, 2}},
      {"matrix times scalar", {3, 2}, {}, {}, {}, {3, 2}},
      {"scalar times scalar", {}, {}, {}, {}, {}},
      {"1x1 matrices", {1, 1}, {1, 1}, {{1}, {0}}, {}, {1, 1}},
      {"lhs free dims", {2, 3, 4}, {4, 5}, {{2}, {0}}, {}, {2, 3, 5}},
      {"rhs free dims", {3, 4}, {4, 5, 2}, {{1}, {0}}, {}, {3, 5, 2}},
      {"free dims both sides", {2, 3, 4}, {4, 5, 6}, {{2}, {0}}, {}, {2, 3, 5, 6}},
      {"contract middle dims", {2, 4, 3}, {5, 4, 2}, {{1}, {1}}, {}, {2, 3, 5, 2}},
      {"two contracting dims", {2, 3, 4}, {3, 4, 5}, {{1, 2}, {0, 1}}, {}, {2, 5}},
      {"two contracting dims, pairs reversed", {2, 3, 4}, {3, 4, 5}, {{2, 1}, {1, 0}}, {}, {2, 5}},
      {"two contracting dims, rhs permuted", {2, 3, 4}, {4, 3, 5}, {{1, 2}, {1, 0}}, {}, {2, 5}},
      {"full contraction", {3, 4}, {3, 4}, {{0, 1}, {0, 1}}, {}, {}},
      {"batched matmul", {2, 3, 4}, {2, 4, 5}, {{2}, {1}}, {{0}, {0}}, {2, 3, 5}},
      {"batched, rhs transposed", {2, 3, 4}, {2, 5, 4}, {{2}, {2}}, {{0}, {0}}, {2, 3, 5}},
      {"batched matrix-vector", {4, 3, 5}, {4, 5}, {{2}, {1}}, {{0}, {0}}, {4, 3}},
      {"batched vector-vector", {4, 5}, {4, 5}, {{1}, {1}}, {{0}, {0}}, {4}},
      {"batch dim 1", {3, 2, 4}, {4, 2, 5}, {{2}, {0}}, {{1}, {1}}, {2, 3, 5}},
      {"batch dim last", {3, 4, 2}, {4, 5, 2}, {{1}, {0}}, {{2}, {2}}, {2, 3, 5}},
      {"two batch dims", {2, 3, 4, 5}, {2, 3, 5, 6}, {{3}, {2}}, {{0, 1}, {0, 1}}, {2, 3, 4, 6}},
      {"two batch dims, reversed", {2, 3, 4, 5}, {2, 3, 5, 6}, {{3}, {2}}, {{1, 0}, {1, 0}}, {3, 2, 4, 6}},
      {"batch only (elementwise product)", {3, 4}, {3, 4}, {}, {{0, 1}, {0, 1}}, {3, 4}},
      {"size-0 contracting dim gives zeros", {3, 0}, {0, 4}, {{1}, {0}}, {}, {3, 4}},
      {"size-0 contracting, batched", {2, 3, 0}, {2, 0, 4}, {{2}, {1}}, {{0}, {0}}, {2, 3, 4}},
      {"size-0 lhs free dim", {0, 4}, {4, 5}, {{1}, {0}}, {}, {0, 5}},
      {"size-0 rhs free dim", {3, 4}, {4, 0}, {{1}, {0}}, {}, {3, 0}},
      {"size-0 batch dim", {0, 3, 4}, {0, 4, 5}, {{2}, {1}}, {{0}, {0}}, {0, 3, 5}},
  };
  return c;
}

// Longer contractions (K from 64 to 300), on grid values.
const std::vector<Case>& long_cases() {
  static const std::vector<Case> c{
      {"matmul K=70", {33, 70}, {70, 41}, {{1}, {0}}, {}, {33, 41}},
      {"matmul K=300, lhs transposed", {300, 16}, {300, 9}, {{0}, {0}}, {}, {16, 9}},
      {"matmul K=128, rhs transposed", {20, 128}, {24, 128}, {{1}, {1}}, {}, {20, 24}},
      {"matrix-vector K=257", {13, 257}, {257}, {{1}, {0}}, {}, {13}},
      {"vector-vector K=300", {300}, {300}, {{0}, {0}}, {}, {}},
      {"batched K=64, batch dim 1", {10, 3, 64}, {64, 3, 12}, {{2}, {0}}, {{1}, {1}}, {3, 10, 12}},
  };
  return c;
}

std::string label(const Case& c, DType dt) {
  std::ostringstream os;
  os << c.what << ": " << AbstractValue{c.lhs, dt} << " . " << AbstractValue{c.rhs, dt} << " contract=";
  detail::print_param(os, c.contract);
  os << " batch=";
  detail::print_param(os, c.batch);
  return os.str();
}

Sample make_sample(const Case& c, DType dt, Tensor lhs, Tensor rhs) {
  AxisPair contract = c.contract, batch = c.batch;
  return Sample{label(c, dt),
                {std::move(lhs), std::move(rhs)},
                binary_fn([contract, batch](const Tensor& a, const Tensor& b) {
                  return lax::dot_general(a, b, contract, batch);
                }),
                {AbstractValue{c.out, dt}}};
}

std::vector<Sample> samples(DType dt) {
  std::vector<Sample> out;
  uint64_t seed = 700;
  for (const Case& c : cases()) {
    Tensor l = random_tensor(c.lhs, dt, seed++), r = random_tensor(c.rhs, dt, seed++);
    out.push_back(make_sample(c, dt, l, r));
  }
  for (const Case& c : long_cases()) {
    Tensor l = grid_tensor(c.lhs, dt, seed++), r = grid_tensor(c.rhs, dt, seed++);
    out.push_back(make_sample(c, dt, l, r));
  }
  for (DType d : {i32, i64})
    for (size_t i : {0, 3, 4, 8, 20, 22, 27, 29, 31})
      out.push_back(make_sample(cases()[i], d, random_tensor(cases()[i].lhs, d, seed++, -9, 9),
                                random_tensor(cases()[i].rhs, d, seed++, -9, 9)));
  return out;
}

void dot(const Shape& l, DType ld, const Shape& r, DType rd, AxisPair contract, AxisPair batch = {}) {
  lax::dot_general(zeros(l, ld), zeros(r, rd), contract, batch);
}

const bool registered = register_samples(
    "dot_general",
    {samples,
     {bad<ShapeError>("contracting sizes differ",
                      "[dot_general] contracting dims (1,) of lhs f32[2,3] and (0,) of rhs f32[4,5] have different "
                      "sizes: lhs dim 1 is 3, rhs dim 0 is 4",
                      [] {
                        dot({2, 3}, f32, {4, 5}, f32, {{1}, {0}});
                      }),
      bad<ShapeError>("batch sizes differ",
                      "[dot_general] batch dims (0,) of lhs f64[2,3,4] and (0,) of rhs f64[3,4,5]",
                      [] {
                        dot({2, 3, 4}, f64, {3, 4, 5}, f64, {{2}, {1}}, {{0}, {0}});
                      }),
      bad<ShapeError>("pair counts differ", "[dot_general] contracting dims (1,) of lhs f32[2,3] and () of rhs",
                      [] {
                        dot({2, 3}, f32, {3}, f32, {{1}, {}});
                      }),
      bad<AxisError>("contracting dim out of range",
                     "[dot_general] rhs contracting dim 2 is out of range for rhs f32[3,4]",
                     [] {
                       dot({2, 3}, f32, {3, 4}, f32, {{1}, {2}});
                     }),
      bad<AxisError>("dim contracted and batched", "[dot_general] lhs dim 0 of f32[3,3] appears more than once",
                     [] {
                       dot({3, 3}, f32, {3, 3}, f32, {{0}, {1}}, {{0}, {0}});
                     }),
      bad<AxisError>("negative dim", "[dot_general] lhs contracting dim -1 is out of range",
                     [] {
                       dot({2, 3}, f32, {3, 4}, f32, {{-1}, {0}});
                     }),
      bad<DTypeError>("bool operands", "[dot_general] got an operand of type bool[2,3]",
                      [] {
                        dot({2, 3}, boolean, {3, 4}, boolean, {{1}, {0}});
                      }),
      bad<DTypeError>("dtypes differ", "[dot_general] operand dtypes differ: lhs f32[2,3] and rhs f64[3,4]", [] {
        dot({2, 3}, f32, {3, 4}, f64, {{1}, {0}});
      })}});

}  // namespace dot_general_samples
}  // namespace fluxion::testing
