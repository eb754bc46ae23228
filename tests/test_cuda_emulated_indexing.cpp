// The CUDA indexing kernels (backends/cuda/kernels/indexing*.hpp) on the edges the registry samples
// miss: every dtype (i64 included), layouts past kMaxKernelRank before and after merging, empty
// tensors, starts and indices far out of range, duplicate scatter indices and integer wrap-around.
// Each case runs the primitive on Backend::cuda_emulated and on the reference kernels.
#include <doctest/doctest.h>

#include <climits>
#include <string>
#include <vector>

#include "backends/cuda/device_code.hpp"
#include "primitives/indexing.hpp"
#include "primitives/shape.hpp"
#include "sample_eval.hpp"

namespace fx = fluxion;
namespace sf = fx::primitives::shape_family;
namespace ix = fx::primitives::indexing_family;
using Ints = std::vector<int64_t>;

namespace {

const std::vector<fx::DType> kAllDTypes{fx::boolean, fx::i32, fx::i64, fx::f32, fx::f64};

// `p` on cuda_emulated equals `p` on the reference kernels: avals, values (integers exactly) and
// signs of zero.
void check_matches_reference(const fx::Primitive& p, const std::vector<fx::Tensor>& in, const fx::Params& params) {
  const auto want = fx::eval_primitive(p, in, params, fx::Backend::reference);
  const auto got = fx::eval_primitive(p, in, params, fx::Backend::cuda_emulated);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    CHECK(got[k].aval() == want[k].aval());
    CHECK_MESSAGE(fx::testing::compare_tensors(got[k], want[k]).empty(), fx::testing::compare_tensors(got[k], want[k]));
    CHECK(fx::testing::zero_sign_mismatch(got[k], want[k]).empty());
    if (!fx::is_floating(want[k].dtype())) CHECK(got[k].to_vector<int64_t>() == want[k].to_vector<int64_t>());
  }
}

fx::Tensor random(const fx::Shape& s, fx::DType d, uint64_t seed) { return fx::testing::random_tensor(s, d, seed); }

fx::Tensor start(int64_t v) { return fx::scalar<int64_t>(v); }

}  // namespace

TEST_CASE("cuda_emulated indexing: the strided copies equal the reference in every dtype") {
  uint64_t seed = 7000;
  for (fx::DType d : kAllDTypes) {
    CAPTURE(d);
    const fx::Tensor x = random({2, 3, 4}, d, seed++);
    check_matches_reference(sf::reshape_p(), {x}, sf::ReshapeParams(fx::Shape{4, 6}));
    check_matches_reference(sf::transpose_p(), {x}, sf::TransposeParams({2, 0, 1}));
    check_matches_reference(sf::broadcast_in_dim_p(), {random({3, 1}, d, seed++)},
                            sf::BroadcastInDimParams(fx::Shape{2, 3, 5}, {1, 2}));
    check_matches_reference(ix::slice_p(), {x}, ix::SliceParams({1, 0, 1}, {2, 3, 4}, {1, 2, 2}));
    check_matches_reference(ix::concatenate_p(), {x, random({2, 1, 4}, d, seed++), x}, ix::ConcatenateParams(1));
    check_matches_reference(ix::pad_p(), {x, random({}, d, seed++)}, ix::PadParams({1, -1, 0}, {0, 2, -1}, {1, 0, 2}));
    check_matches_reference(ix::dynamic_slice_p(), {x, start(1), start(-4), start(2)},
                            ix::DynamicSliceParams({1, 2, 2}));
    check_matches_reference(ix::dynamic_update_slice_p(),
                            {x, random({1, 2, 3}, d, seed++), start(0), start(5), start(1)}, fx::no_params());
    check_matches_reference(ix::gather_p(), {x, fx::from_vector<int64_t>({3, -1, 1, 9}, {2, 2})}, ix::AxisParams(2));
  }
}

TEST_CASE("cuda_emulated indexing: layouts past kMaxKernelRank merge, or fail with NotImplementedError") {
  const int r = fx::cuda::kMaxKernelRank + 2;
  const size_t n = static_cast<size_t>(r);
  const std::string limit = std::to_string(fx::cuda::kMaxKernelRank);
  const fx::Shape big(Ints(n, 2));
  const fx::Tensor x = random(big, fx::f32, 7100);
  Ints identity, reversed;
  for (int k = 0; k < r; ++k) {
    identity.push_back(k);
    reversed.push_back(r - 1 - k);
  }
  // Dims that step through memory as one merge: an identity transpose is one contiguous dim.
  check_matches_reference(sf::transpose_p(), {x}, sf::TransposeParams(identity));
  check_matches_reference(ix::slice_p(), {x}, ix::SliceParams(Ints(n, 0), Ints(n, 2), Ints(n, 1)));
  // Reversed dims never merge: 14 strided dims.
  CHECK_THROWS_WITH_AS(
      fx::eval_primitive(sf::transpose_p(), {x}, sf::TransposeParams(reversed), fx::Backend::cuda_emulated),
      doctest::Contains(("[transpose] the CUDA kernels index at most " + limit + " strided dims").c_str()),
      fx::NotImplementedError);
  // pad: unpadded dims join their neighbours; 14 padded dims do not.
  Ints zeros(n, 0), one_padded = zeros;
  one_padded[3] = 1;
  check_matches_reference(ix::pad_p(), {x, fx::scalar<float>(9)}, ix::PadParams(one_padded, zeros, zeros));
  CHECK_THROWS_WITH_AS(fx::eval_primitive(ix::pad_p(), {x, fx::scalar<float>(9)},
                                          ix::PadParams(Ints(n, 1), zeros, zeros), fx::Backend::cuda_emulated),
                       doctest::Contains(("[pad] the CUDA kernels index at most " + limit + " padded dims").c_str()),
                       fx::NotImplementedError);
}

TEST_CASE("cuda_emulated indexing: empty tensors") {
  const fx::Tensor x = random({3, 0, 2}, fx::f64, 7200), y = random({3, 4}, fx::f64, 7201);
  check_matches_reference(sf::transpose_p(), {x}, sf::TransposeParams({2, 1, 0}));
  check_matches_reference(sf::broadcast_in_dim_p(), {y}, sf::BroadcastInDimParams(fx::Shape{3, 0, 4}, {0, 2}));
  check_matches_reference(ix::concatenate_p(), {y, random({3, 0}, fx::f64, 7202), y}, ix::ConcatenateParams(1));
  check_matches_reference(ix::pad_p(), {x, fx::scalar<double>(1)}, ix::PadParams({0, 2, 0}, {0, 1, 0}, {0, 3, 0}));
  check_matches_reference(ix::iota_p(), {}, ix::IotaParams(fx::i64, fx::Shape{0, 5}, 1));
  check_matches_reference(ix::gather_p(), {y, fx::from_vector<int32_t>({}, {0, 2})}, ix::AxisParams(1));
  check_matches_reference(ix::scatter_add_p(), {y, fx::from_vector<int32_t>({}, {0}), random({3, 0}, fx::f64, 7203)},
                          ix::AxisParams(1));
  check_matches_reference(ix::dynamic_update_slice_p(), {y, random({0, 4}, fx::f64, 7204), start(9), start(-9)},
                          fx::no_params());
}

TEST_CASE("cuda_emulated indexing: starts beyond 32 bits are clamped like the reference") {
  const fx::Tensor x = random({5, 6}, fx::i64, 7300);
  const int64_t huge = int64_t(1) << 40;
  check_matches_reference(ix::dynamic_slice_p(), {x, start(huge), start(-huge)}, ix::DynamicSliceParams({2, 3}));
  check_matches_reference(ix::dynamic_update_slice_p(), {x, random({2, 3}, fx::i64, 7301), start(-huge), start(huge)},
                          fx::no_params());
  check_matches_reference(ix::gather_p(), {x, fx::from_vector<int64_t>({huge, -huge, 2})}, ix::AxisParams(1));
}

TEST_CASE("cuda_emulated indexing: scatter_add sums duplicate indices; integers wrap around") {
  // Values on a 1/16 grid: the float sums are exact in any order, so they equal the reference.
  for (fx::DType d : {fx::f32, fx::f64, fx::i32, fx::i64}) {
    CAPTURE(d);
    const fx::Tensor op = fx::testing::grid_tensor({4, 3}, d, 7400), upd = fx::testing::grid_tensor({4, 8}, d, 7401);
    const fx::Tensor idx = fx::from_vector<int64_t>({1, 1, 1, 0, -5, 7, 1, 2});
    check_matches_reference(ix::scatter_add_p(), {op, idx, upd}, ix::AxisParams(1));
  }
  const fx::Tensor big = fx::from_vector<int32_t>({INT32_MAX, 5}), ones = fx::from_vector<int32_t>({1, 1, 1});
  const auto got = fx::eval_primitive(ix::scatter_add_p(), {big, fx::from_vector<int32_t>({0, 0, 1}), ones},
                                      ix::AxisParams(0), fx::Backend::cuda_emulated);
  CHECK(got[0].to_vector<int64_t>() == std::vector<int64_t>{int64_t(INT32_MIN) + 1, 6});
}

TEST_CASE("fx_atomic_add on the host: a sum, wrapping integers, logical or for bool") {
  float f = 1.5f;
  fx::cuda::fx_atomic_add(&f, 2.0f);
  CHECK(f == 3.5f);
  int64_t l = INT64_MAX;
  fx::cuda::fx_atomic_add(&l, int64_t(2));
  CHECK(l == INT64_MIN + 1);
  int32_t i = INT32_MIN;
  fx::cuda::fx_atomic_add(&i, int32_t(-1));
  CHECK(i == INT32_MAX);
  bool b = false;
  fx::cuda::fx_atomic_add(&b, false);
  CHECK(!b);
  fx::cuda::fx_atomic_add(&b, true);
  fx::cuda::fx_atomic_add(&b, true);
  CHECK(b);
}
