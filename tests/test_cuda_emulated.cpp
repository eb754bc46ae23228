// The CUDA kernels' logic without a GPU: every registered primitive has a kernel in the CUDA
// table and in its CPU emulation (Backend::cuda_emulated: the same kernel bodies run over their
// grid on the CPU), and on every registry sample (f32 and f64) the emulated kernels equal the
// reference kernels, zeros with their signs. With FLUXION_TEST_DEVICE=cuda and a GPU, the same
// samples run on the device (bench/gpu_check.sh).
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <string>

#include "fluxion/cuda.hpp"
#include "runtime/backend.hpp"
#include "sample_eval.hpp"

namespace fx = fluxion;
using fx::testing::sample_registry;

namespace {

bool gpu_requested() {
  const char* d = std::getenv("FLUXION_TEST_DEVICE");
  return d && std::string(d) == "cuda";
}

// Runs every sample of every primitive on `backend` (inputs moved to `device`) against the
// reference kernels; returns the number of output checks.
int64_t run_suite(fx::Backend backend, fx::Device device) {
  int64_t checks = 0;
  std::map<std::string, double> worst;
  for (const fx::Primitive* p : fx::all_primitives()) {
    auto it = sample_registry().find(p->name);
    if (it == sample_registry().end()) continue;
    for (fx::DType dt : {fx::f32, fx::f64}) {
      for (const fx::testing::Sample& s : it->second.make(dt)) {
        if (s.collective_form) continue;  // no single equation to compare (samples.hpp)
        CAPTURE(p->name);
        CAPTURE(s.label);
        fx::Jaxpr j = fx::testing::stage_sample(s);
        REQUIRE(j.equations.size() == 1);
        std::vector<fx::Tensor> in = fx::testing::equation_inputs(j, s);
        const fx::Params& params = *j.equations[0].params;
        auto ref = fx::eval_primitive(*p, in, params, fx::Backend::reference);
        std::vector<fx::Tensor> on_device;
        for (const fx::Tensor& t : in) on_device.push_back(fx::device_put(t, device));
        std::vector<fx::Tensor> got;
        try {
          got = fx::eval_primitive(*p, on_device, params, backend);
        } catch (const fx::Error& e) {
          FAIL_CHECK((std::string(fx::backend_name(backend)) + " kernel threw: " + e.what()));
          continue;
        }
        REQUIRE(got.size() == ref.size());
        for (size_t k = 0; k < ref.size(); ++k) {
          fx::Tensor host = fx::device_put(got[k], fx::Device::cpu());
          CHECK(host.aval() == ref[k].aval());
          std::string diff = fx::testing::compare_tensors(host, ref[k], &worst[p->name]);
          CHECK_MESSAGE(diff.empty(), fx::backend_name(backend) << " vs reference: " << diff);
          diff = fx::testing::zero_sign_mismatch(host, ref[k]);
          CHECK_MESSAGE(diff.empty(), fx::backend_name(backend) << " vs reference: " << diff);
          ++checks;
        }
      }
    }
  }
  for (const auto& [name, w] : worst)
    if (w > 0) std::cout << "  worst relative error " << name << ": " << w << "\n";
  return checks;
}

}  // namespace

TEST_CASE("cuda kernel table: every primitive has a cuda_emulated kernel, and a cuda one when compiled") {
  fx::runtime::ensure_kernel_table(fx::Backend::cuda_emulated);
  fx::runtime::ensure_kernel_table(fx::Backend::cuda);
  for (const fx::Primitive* p : fx::all_primitives()) {
    CAPTURE(p->name);
    if (p->traits.view && !p->kernel(fx::Backend::cpu)) continue;  // a view with no kernel anywhere
    CHECK_MESSAGE(bool(p->kernel(fx::Backend::cuda_emulated)), "no cuda_emulated kernel");
    if (fx::cuda::compiled()) CHECK_MESSAGE(bool(p->kernel(fx::Backend::cuda)), "no cuda kernel");
  }
}

TEST_CASE("cuda_emulated: the CUDA kernel bodies equal the reference kernels on every sample, f32 and f64") {
  int64_t checks = run_suite(fx::Backend::cuda_emulated, fx::Device::cpu());
  std::cout << "[cuda_emulated] " << checks << " output checks over " << fx::all_primitives().size() << " primitives\n";
}

TEST_CASE("cuda: the CUDA kernels equal the reference kernels on every sample (GPU)") {
  if (!fx::cuda::is_available()) {
    std::cout << "test_cuda_emulated: SKIPPED the GPU rule suite: " << fx::cuda::unavailable_reason() << "\n";
    return;
  }
  if (!gpu_requested()) {
    std::cout << "test_cuda_emulated: SKIPPED the GPU rule suite: set FLUXION_TEST_DEVICE=cuda to run it\n";
    return;
  }
  int64_t checks = run_suite(fx::Backend::cuda, fx::Device::cuda(0));
  std::cout << "[cuda] " << checks << " output checks on " << fx::Device::cuda(0) << "\n";
}
