// The CUDA runner (plan_runners.hpp): fused steps' kernels compiled to PTX by NVRTC for the plan's
// device, loaded as modules of its primary context and launched with cuLaunchKernel. The driver
// API is reached through cudaGetDriverEntryPointByVersion, so Fluxion links no libcuda and starts
// where the toolkit is installed without a driver.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "backends/cuda/jit/nvrtc_compiler.hpp"
#include "backends/cuda/jit/plan_runners.hpp"
#include "backends/cuda/jit/run_steps.hpp"
#include "backends/cuda/jit/stream.hpp"
#include "fluxion/cuda.hpp"

namespace fluxion::cuda::jit {

namespace cuda_runner_detail {

void check_runtime(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  detail::fail<DeviceError>("jit", call, " failed: ", cudaGetErrorString(e), " (", cudaGetErrorName(e), ").");
}

/// The driver entry points the runner calls, resolved once.
struct Driver {
  PFN_cuModuleLoadData_v2000 module_load_data = nullptr;
  PFN_cuModuleGetFunction_v2000 module_get_function = nullptr;
  PFN_cuLaunchKernel_v4000 launch_kernel = nullptr;
  PFN_cuGetErrorString_v6000 get_error_string = nullptr;
};

template <class F> void resolve(const char* symbol, F& fn) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  check_runtime(cudaGetDriverEntryPointByVersion(symbol, &address, 12000, cudaEnableDefault, &found),
                "cudaGetDriverEntryPointByVersion");
  if (found != cudaDriverEntryPointSuccess || !address)
    detail::fail<DeviceError>("jit", "the CUDA driver has no entry point ", symbol,
                              ". Install a driver for CUDA 12 or newer.");
  fn = reinterpret_cast<F>(address);
}

const Driver& driver() {
  static const Driver d = [] {
    Driver r;
    resolve("cuModuleLoadData", r.module_load_data);
    resolve("cuModuleGetFunction", r.module_get_function);
    resolve("cuLaunchKernel", r.launch_kernel);
    resolve("cuGetErrorString", r.get_error_string);
    return r;
  }();
  return d;
}

void check_driver(CUresult r, const char* call, const std::string& kernel) {
  if (r == CUDA_SUCCESS) return;
  const char* text = nullptr;
  if (driver().get_error_string(r, &text) != CUDA_SUCCESS || !text) text = "unknown error";
  detail::fail<DeviceError>("jit", call, " failed for generated kernel ", kernel, ": ", text, " (CUresult ",
                            static_cast<int>(r), ").");
}

/// What the runner keeps per device: its NVRTC architecture and multiprocessors, and the loaded
/// kernels (modules are never unloaded: plans hold their functions for the process's life).
struct DeviceKernels {
  int arch = 0;
  int64_t max_blocks = 0;
  std::map<std::string, CUfunction> functions;  // by kernel name
};

std::mutex& devices_mutex() {
  static std::mutex m;
  return m;
}
std::map<int, DeviceKernels>& devices() {
  static std::map<int, DeviceKernels> d;
  return d;
}

/// The device's entry, filled on first use (the caller holds devices_mutex and a DeviceScope).
DeviceKernels& device_kernels(int index) {
  DeviceKernels& d = devices()[index];
  if (d.arch == 0) {
    int major = 0, minor = 0, sms = 0;
    check_runtime(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index), "cudaDeviceGetAttribute");
    check_runtime(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index), "cudaDeviceGetAttribute");
    check_runtime(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, index), "cudaDeviceGetAttribute");
    d.arch = architecture_for_device(major, minor);
    d.max_blocks = int64_t(std::max(sms, 1)) * 32;  // enough resident blocks to cover memory latency
  }
  return d;
}

/// Loads `lowered`'s kernel on device `index` (compiling it with NVRTC, cached, when needed) and
/// sets its function and grid.
void load(int index, FusedStepLowering& lowered) {
  const FusedKernel& kernel = lowered.kernel;
  DeviceScope scope(index);
  check_runtime(cudaFree(nullptr), "cudaFree");  // makes the primary context current
  int arch = 0;
  {
    std::lock_guard<std::mutex> lock(devices_mutex());
    DeviceKernels& d = device_kernels(index);
    lowered.grid = fused_grid(kernel.items, d.max_blocks);
    auto it = d.functions.find(kernel.name);
    if (it != d.functions.end()) {
      lowered.function = it->second;
      return;
    }
    arch = d.arch;
  }
  const std::string ptx = compile_to_ptx(kernel.source, kernel.name, arch);
  std::lock_guard<std::mutex> lock(devices_mutex());
  DeviceKernels& d = devices()[index];
  auto it = d.functions.find(kernel.name);
  if (it != d.functions.end()) {
    lowered.function = it->second;
    return;
  }
  CUmodule module = nullptr;
  check_driver(driver().module_load_data(&module, ptx.c_str()), "cuModuleLoadData", kernel.name);
  CUfunction function = nullptr;
  check_driver(driver().module_get_function(&function, module, kernel.name.c_str()), "cuModuleGetFunction",
               kernel.name);
  d.functions.emplace(kernel.name, function);
  lowered.function = function;
}

/// Copies the literal inputs of kernel step `step` to `device` once, for every call of the plan.
void place_literals(Device device, runtime::Step& step) {
  const Equation& e = *step.eqn;
  if (std::none_of(e.inputs.begin(), e.inputs.end(), [](const Atom& a) { return a.is_literal(); })) return;
  auto placed = std::make_shared<PlacedLiterals>();
  for (const Atom& a : e.inputs) placed->by_input.push_back(a.is_literal() ? device_put(a.literal, device) : Tensor());
  step.lowering = std::move(placed);
}

class CudaRunner final : public runtime::PlanRunner {
 public:
  const char* name() const override { return "cuda (NVRTC-generated fused kernels)"; }
  const runtime::Lowering& lowering() const override { return fused_lowering(); }

  void lower(runtime::Plan& plan) const override {
    for (runtime::Step& step : plan.steps) {
      if (step.type == runtime::Step::kernel) place_literals(plan.device, step);
      if (step.type != runtime::Step::fused) continue;
      auto lowered = std::make_shared<FusedStepLowering>();
      lowered->kernel = generate_fused_kernel(*plan.jaxpr, step);
      load(plan.device.index, *lowered);
      step.lowering = std::move(lowered);
    }
  }

  std::unique_ptr<runtime::Workspace> make_workspace(const runtime::Plan& plan) const override {
    return make_jit_workspace(plan);
  }

  void run(const runtime::Plan& plan, runtime::RunState& s) const override {
    DeviceScope scope(plan.device.index);
    const cudaStream_t stream = jit_stream(plan.device);
    run_steps(plan, s, [&](const FusedStepLowering& lowered, void** args) {
      const CUfunction f = static_cast<CUfunction>(const_cast<void*>(lowered.function));
      check_driver(driver().launch_kernel(f, lowered.grid, 1, 1, static_cast<unsigned>(kFusedBlockThreads), 1, 1, 0,
                                          static_cast<CUstream>(stream), args, nullptr),
                   "cuLaunchKernel", lowered.kernel.name);
    });
  }

  std::string describe(const runtime::Step& step) const override {
    const auto* lowered = dynamic_cast<const FusedStepLowering*>(step.lowering.get());
    return lowered ? ", kernel " + lowered->kernel.name : std::string();
  }
};

}  // namespace cuda_runner_detail

const runtime::PlanRunner& cuda_plan_runner() {
  static const cuda_runner_detail::CudaRunner runner;
  return runner;
}

}  // namespace fluxion::cuda::jit
