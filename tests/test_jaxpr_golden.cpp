// Golden tests of the Jaxpr printer: the DESIGN.md §4 format, produced by the fx:: op layer.
#include <doctest/doctest.h>

#include <sstream>

#include <fluxion/fluxion.hpp>

#include "test_util.hpp"

namespace fx = fluxion;

using fluxion::testing::jaxpr_text;

TEST_CASE("golden: sum(tanh(matmul(x, w)) * 2.0) prints in the DESIGN.md format") {
  auto f = [](const fx::Tensor& x, const fx::Tensor& w) { return fx::sum(fx::tanh(fx::matmul(x, w)) * 2.0); };
  CHECK(jaxpr_text(f, fx::ones({4, 8}, fx::f32), fx::ones({8, 2}, fx::f32)) ==
        "{ lambda ; a:f32[4,8] b:f32[8,2]. let\n"
        "    c:f32[4,2] = dot_general[contract=((1,),(0,)) batch=((),())] a b\n"
        "    d:f32[4,2] = tanh c\n"
        "    e:f32[4,2] = mul d 2.0:f32[]\n"
        "    f:f32[] = reduce_sum[axes=(0,1)] e\n"
        "  in (f,) }");
}

TEST_CASE("golden: promotion and broadcasting appear as explicit primitives") {
  auto f = [](const fx::Tensor& x, const fx::Tensor& y) { return x + y; };
  CHECK(jaxpr_text(f, fx::ones({3}, fx::f32), fx::ones({2, 1}, fx::f64)) ==
        "{ lambda ; a:f32[3] b:f64[2,1]. let\n"
        "    c:f64[3] = convert_element_type[new_dtype=f64] a\n"
        "    d:f64[2,3] = broadcast_in_dim[shape=(2,3) broadcast_dimensions=(1,)] c\n"
        "    e:f64[2,3] = broadcast_in_dim[shape=(2,3) broadcast_dimensions=(0,1)] b\n"
        "    f:f64[2,3] = add d e\n"
        "  in (f,) }");
}

TEST_CASE("golden: integer and boolean literals carry their types") {
  auto f = [](const fx::Tensor& i) {
    fx::Tensor big = i > 2;  // named first: C++ leaves the order of argument evaluation open
    return fx::where(big, i * 3, i);
  };
  CHECK(jaxpr_text(f, fx::arange(4)) ==
        "{ lambda ; a:i32[4]. let\n"
        "    b:bool[4] = gt a 2:i32[]\n"
        "    c:i32[4] = mul a 3:i32[]\n"
        "    d:i32[4] = select b c a\n"
        "  in (d,) }");
}

TEST_CASE("golden: reductions, reshapes and slices print their params") {
  auto f = [](const fx::Tensor& x) {
    fx::Tensor m = fx::max(x, {-1}, /*keepdims=*/true);
    return fx::slice(fx::reshape(x - m, {6}), {1}, {5}, {2});
  };
  CHECK(jaxpr_text(f, fx::ones({2, 3})) ==
        "{ lambda ; a:f64[2,3]. let\n"
        "    b:f64[2] = reduce_max[axes=(1,)] a\n"
        "    c:f64[2,1] = expand_dims[dimensions=(1,)] b\n"
        "    d:f64[2,3] = broadcast_in_dim[shape=(2,3) broadcast_dimensions=(0,1)] c\n"
        "    e:f64[2,3] = sub a d\n"
        "    f:f64[6] = reshape[new_sizes=(6,)] e\n"
        "    g:f64[2] = slice[start_indices=(1,) limit_indices=(5,) strides=(2,)] f\n"
        "  in (g,) }");
}
