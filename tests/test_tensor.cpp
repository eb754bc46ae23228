// Tensors: creation, element access, printing, and the errors of bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include <fluxion/fluxion.hpp>

#include "test_util.hpp"

namespace fx = fluxion;

using fluxion::testing::message_of;
template <class T> std::string str(const T& v) { return fluxion::testing::to_text(v); }

TEST_CASE("tensor: braced lists keep their element type and shape") {
  fx::Tensor a = fx::tensor({1.0, 2.0, 3.0});
  CHECK(a.dtype() == fx::f64);
  CHECK(a.shape() == std::vector<int64_t>{3});
  fx::Tensor b = fx::tensor({{1.f, 2.f}, {3.f, 4.f}});
  CHECK(b.dtype() == fx::f32);
  CHECK(b.shape() == std::vector<int64_t>{2, 2});
  CHECK(b.to_vector<double>() == std::vector<double>{1, 2, 3, 4});
  CHECK(fx::tensor({1, 2}).dtype() == fx::i32);
  CHECK(fx::scalar(2.0).ndim() == 0);
  CHECK(fx::scalar(2.0).item<double>() == 2.0);
}

TEST_CASE("tensor: creation functions default to f64 except arange, which is i32") {
  CHECK(fx::zeros({2, 3}).dtype() == fx::f64);
  CHECK(fx::zeros({2, 3}).size() == 6);
  CHECK(fx::ones({2, 3}, fx::f32).to_vector<float>() == std::vector<float>(6, 1.f));
  CHECK(fx::full({2}, 3.0).to_vector<double>() == std::vector<double>{3, 3});
  CHECK(fx::arange(5).dtype() == fx::i32);
  CHECK(fx::arange(5).to_vector<int>() == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(fx::arange(5, 0, -2).to_vector<int>() == std::vector<int>{5, 3, 1});
  CHECK(fx::linspace(0.0, 1.0, 5).to_vector<double>() == std::vector<double>{0, 0.25, 0.5, 0.75, 1});
  CHECK(fx::eye(2).to_vector<double>() == std::vector<double>{1, 0, 0, 1});
  fx::Tensor t = fx::tensor({{1.f, 2.f}});
  CHECK(fx::zeros_like(t).aval() == t.aval());
  CHECK(fx::ones_like(t).to_vector<float>() == std::vector<float>{1, 1});
  CHECK(fx::full_like(t, 2.5).to_vector<float>() == std::vector<float>{2.5f, 2.5f});
  CHECK(fx::zeros({0, 3}).size() == 0);
}

TEST_CASE("tensor: from_vector copies and checks the element count") {
  std::vector<double> v{1, 2, 3, 4, 5, 6};
  fx::Tensor t = fx::from_vector(v, {2, 3});
  v[0] = 100;
  CHECK(t.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(t.shape() == std::vector<int64_t>{2, 3});
}

TEST_CASE("tensor: item needs exactly one element") {
  fx::Tensor t = fx::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK_THROWS_AS(t.item<double>(), fx::ShapeError);
  CHECK(message_of<fx::ShapeError>([&] { t.item<double>(); }) ==
        "[item] needs a tensor with exactly one element, got f64[2,3]. Index or reduce it first.");
  CHECK(fx::from_vector(std::vector<double>{7}, {1, 1}).item<int>() == 7);
}

TEST_CASE("tensor: bad shapes and counts raise ShapeError with the values") {
  CHECK(message_of<fx::ShapeError>([] {
          fx::from_vector(std::vector<double>{1, 2, 3}, {2, 2});
        }) ==
        "[from_vector] got 3 values for shape [2,2] which holds 4. Pass exactly as many values as the shape holds.");
  CHECK(message_of<fx::ShapeError>([] { fx::zeros({2, -1}); }).find("[zeros] negative dimension -1") == 0);
  CHECK(message_of<fx::ShapeError>([] {
          fx::zeros({int64_t(1) << 40, int64_t(1) << 40});
        }).find("has more than 2^48 elements") != std::string::npos);
  CHECK_THROWS_AS(fx::tensor({{1.0, 2.0}, {3.0}}), fx::ShapeError);
  CHECK_THROWS_AS(fx::linspace(0, 1, -1), fx::ShapeError);
}

TEST_CASE("tensor: element access with the wrong C++ type is a DTypeError") {
  fx::Tensor t = fx::tensor({1.0f});
  CHECK_THROWS_AS(t.data<double>(), fx::DTypeError);
  CHECK(t.data<float>()[0] == 1.0f);
  CHECK_THROWS_AS(fx::Tensor().shape(), fx::Error);
}

TEST_CASE("tensor: conversions to C++ values follow convert_element_type's rules") {
  fx::Tensor t = fx::tensor({1.5, -2.5, std::nan("")});
  CHECK(t.to_vector<int>() == std::vector<int>{1, -2, 0});  // truncation; NaN -> 0
  CHECK(fx::tensor({1e300}).to_vector<int>() == std::vector<int>{std::numeric_limits<int>::max()});
  CHECK(fx::tensor({0.0, 0.5}).to_vector<bool>() == std::vector<bool>{false, true});
}

TEST_CASE("tensor: printing is numpy-like") {
  CHECK(str(fx::tensor({1.0, 2.5, 3.0})) == "[1.  2.5 3. ]");
  CHECK(str(fx::tensor({10.5, 1.25})) == "[10.5   1.25]");
  CHECK(str(fx::tensor({{1, 2}, {3, 4}})) == "[[1 2]\n [3 4]]");
  CHECK(str(fx::scalar(2.0)) == "2.");
  CHECK(str(fx::zeros({0})) == "[]");
  CHECK(str(fx::tensor({true, false})) == "[ True False]");
  std::string big = str(fx::arange(5000));
  CHECK(big == "[   0    1    2 ... 4997 4998 4999]");
  CHECK(str(fx::AbstractValue{fx::Shape{4, 8}, fx::f32}) == "f32[4,8]");
}

TEST_CASE("tensor: Eigen interop copies 1-d and 2-d data both ways") {
  Eigen::MatrixXd m(2, 3);
  m << 1, 2, 3, 4, 5, 6;
  fx::Tensor t = fx::from_eigen(m);
  CHECK(t.aval() == fx::AbstractValue{fx::Shape{2, 3}, fx::f64});
  CHECK(t.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});  // row-major
  Eigen::VectorXf v(3);
  v << 1.5f, 2.5f, 3.5f;
  CHECK(fx::from_eigen(v).aval() == fx::AbstractValue{fx::Shape{3}, fx::f32});
  Eigen::MatrixXd back = fx::to_eigen<double>(t * 2.0);
  CHECK(back(1, 2) == 12.0);
  CHECK(back.rows() == 2);
  CHECK(fx::to_eigen<float>(fx::tensor({1.0, 2.0})).cols() == 1);
  CHECK_THROWS_AS(fx::to_eigen<double>(fx::zeros({2, 2, 2})), fx::ShapeError);
}
