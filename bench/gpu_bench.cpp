// The GPU benchmark of bench/gpu_check.sh (issue 30): what Fluxion's CUDA backend reaches against
// the GPU's own limits, measured on cuda:0 and printed as one table.
//   copy      cudaMemcpy device to device: the bandwidth every elementwise target is a share of
//   chain     an eager elementwise chain (sin(x) * x + x, 16.7M f32), against the bytes a fused
//             kernel would move (read x, write the result): % of the copy bandwidth
//   gemm      dot_general (fx::matmul) against one raw cuBLAS call of the same product, f32 / f64
//   latency   one small eager op (sin of f32[16]) per call, queued back to back; and item()
//             (op, copy back, wait)
// Without a GPU it prints why and exits 0. With $OUT set, the table is also written to
// $OUT/gpu_bench.txt. A row whose Fluxion side throws (a kernel not written yet) says why.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fluxion/fluxion.hpp>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fx = fluxion;

namespace {

using Clock = std::chrono::steady_clock;

void cuda_check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "gpu_bench: %s failed: %s\n", call, cudaGetErrorString(e));
    std::exit(1);
  }
}

void cublas_check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "gpu_bench: %s failed: %s\n", call, cublasGetStatusString(s));
    std::exit(1);
  }
}

/// The median seconds of `reps` runs of f (after one warm-up), each timed on the host and closed
/// by `sync` (so queued GPU work is inside the time).
double median_seconds(int reps, const std::function<void()>& f, const std::function<void()>& sync) {
  f();
  sync();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto start = Clock::now();
    f();
    sync();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Row {
  std::string name, size, time, rate, versus;
};

std::vector<Row> rows;

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

/// Runs one Fluxion measurement; a throw becomes a row saying why.
void fluxion_row(const std::string& name, const std::string& size, const std::function<Row()>& measure) {
  try {
    rows.push_back(measure());
  } catch (const std::exception& e) {
    std::string why = e.what();
    if (why.size() > 90) why = why.substr(0, 87) + "...";
    rows.push_back({name, size, "n/a", "", why});
  }
}

fx::Tensor on_gpu(const fx::Tensor& x) { return fx::device_put(x, fx::Device::cuda(0)); }
void sync0() { fx::cuda::synchronize(0); }

// ---- copy bandwidth and the elementwise chain ----
double copy_bandwidth(int64_t n) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  void *a = nullptr, *b = nullptr;
  cuda_check(cudaMalloc(&a, bytes), "cudaMalloc");
  cuda_check(cudaMalloc(&b, bytes), "cudaMalloc");
  cuda_check(cudaMemset(a, 0, bytes), "cudaMemset");
  double s = median_seconds(
      20, [&] { cuda_check(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy"); },
      [] { cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); });
  cudaFree(a);
  cudaFree(b);
  const double gbs = 2.0 * static_cast<double>(bytes) / s / 1e9;  // read + write
  rows.push_back({"copy D2D (cudaMemcpy)", fmt("%.0f MB", static_cast<double>(bytes) / 1e6), fmt("%.1f us", s * 1e6),
                  fmt("%.0f GB/s", gbs), "100 % (the reference)"});
  return gbs;
}

void elementwise_chain(int64_t n, double copy_gbs) {
  fluxion_row("eager chain sin(x)*x+x f32", std::to_string(n), [&] {
    fx::Tensor x = on_gpu(fx::linspace(-3.0, 3.0, n, fx::f32));
    fx::Tensor y;
    double s = median_seconds(
        20, [&] { y = fx::sin(x) * x + x; }, sync0);
    // Check one value against the CPU (the bench must compute the right thing).
    const float xv = x.to_vector<float>()[12345 % n];
    const float got = y.to_vector<float>()[12345 % n];
    const float want = std::sin(xv) * xv + xv;
    if (std::abs(got - want) > 1e-5f * (1 + std::abs(want)))
      throw std::runtime_error("wrong value: " + std::to_string(got) + " vs " + std::to_string(want));
    const double fused_bytes = 2.0 * static_cast<double>(n) * sizeof(float);
    const double gbs = fused_bytes / s / 1e9;
    return Row{"eager chain sin(x)*x+x f32", std::to_string(n), fmt("%.1f us", s * 1e6),
               fmt("%.0f GB/s fused-equiv.", gbs), fmt("%.0f %% of copy", 100.0 * gbs / copy_gbs)};
  });
}

// ---- dot_general against cuBLAS ----
template <class T> double raw_cublas_seconds(int64_t m, int64_t k, int64_t n) {
  cublasHandle_t h = nullptr;
  cublas_check(cublasCreate(&h), "cublasCreate");
  T *a = nullptr, *b = nullptr, *c = nullptr;
  cuda_check(cudaMalloc(&a, sizeof(T) * m * k), "cudaMalloc");
  cuda_check(cudaMalloc(&b, sizeof(T) * k * n), "cudaMalloc");
  cuda_check(cudaMalloc(&c, sizeof(T) * m * n), "cudaMalloc");
  cuda_check(cudaMemset(a, 0, sizeof(T) * m * k), "cudaMemset");
  cuda_check(cudaMemset(b, 0, sizeof(T) * k * n), "cudaMemset");
  const T one = 1, zero = 0;
  // Row-major C = A B is column-major Cᵀ = Bᵀ Aᵀ: the same call Fluxion's mapping makes.
  double s = median_seconds(
      10,
      [&] {
        if constexpr (sizeof(T) == 4)
          cublas_check(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(m), int(k), &one, b, int(n), a, int(k),
                                   &zero, c, int(n)),
                       "cublasSgemm");
        else
          cublas_check(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(m), int(k), &one, b, int(n), a, int(k),
                                   &zero, c, int(n)),
                       "cublasDgemm");
      },
      [] { cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); });
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cublasDestroy(h);
  return s;
}

template <class T> void gemm_rows(int64_t m, int64_t k, int64_t n) {
  const char* dt = sizeof(T) == 4 ? "f32" : "f64";
  const std::string size = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
  const double flops = 2.0 * double(m) * double(k) * double(n);
  const double raw = raw_cublas_seconds<T>(m, k, n);
  rows.push_back({std::string("raw cuBLAS gemm ") + dt, size, fmt("%.1f us", raw * 1e6),
                  fmt("%.1f TFLOP/s", flops / raw / 1e12), "100 % (the reference)"});
  fluxion_row(std::string("fx::matmul ") + dt, size, [&] {
    const fx::DType dtype = sizeof(T) == 4 ? fx::f32 : fx::f64;
    fx::Tensor a = on_gpu(fx::reshape(fx::linspace(-1.0, 1.0, m * k, dtype), {m, k}));
    fx::Tensor b = on_gpu(fx::reshape(fx::linspace(1.0, -1.0, k * n, dtype), {k, n}));
    fx::Tensor c;
    double s = median_seconds(
        10, [&] { c = fx::matmul(a, b); }, sync0);
    // c[0, 0] = sum_p a[0, p] b[p, 0], checked on the host.
    std::vector<double> av = fx::reshape(a, {m * k}).to_vector<double>(),
                        bv = fx::reshape(b, {k * n}).to_vector<double>();
    double want = 0;
    for (int64_t p = 0; p < k; ++p) want += av[size_t(p)] * bv[size_t(p * n)];
    const double got = fx::reshape(c, {m * n}).to_vector<double>()[0];
    if (std::abs(got - want) > 1e-3 * (1 + std::abs(want)))
      throw std::runtime_error("wrong value: " + std::to_string(got) + " vs " + std::to_string(want));
    return Row{std::string("fx::matmul ") + dt, size, fmt("%.1f us", s * 1e6), fmt("%.1f TFLOP/s", flops / s / 1e12),
               fmt("%.0f %% of cuBLAS", 100.0 * raw / s)};
  });
}

// ---- small-call latency ----
void latency_rows() {
  fluxion_row("eager sin, f32[16], per call", "1000 calls", [] {
    fx::Tensor x = on_gpu(fx::linspace(0.0, 1.0, 16, fx::f32));
    fx::Tensor y;
    const int calls = 1000;
    double s = median_seconds(
        5,
        [&] {
          for (int i = 0; i < calls; ++i) y = fx::sin(x);
        },
        sync0);
    return Row{"eager sin, f32[16], per call", "1000 calls", fmt("%.2f us", s / calls * 1e6), "", "queued, one sync"};
  });
  fluxion_row("eager sin + item(), f32[1]", "round trip", [] {
    fx::Tensor x = on_gpu(fx::scalar(0.5f));
    double v = 0;
    double s = median_seconds(
        50, [&] { v += fx::sin(x).item<double>(); }, [] {});
    return Row{"eager sin + item(), f32[]", "round trip", fmt("%.2f us", s * 1e6), "", "op, copy back, wait"};
  });
}

void print_table(std::ostream& os) {
  const char* head[] = {"benchmark", "size", "time", "rate", "versus"};
  size_t w[5] = {0, 0, 0, 0, 0};
  auto cells = [](const Row& r) { return std::vector<std::string>{r.name, r.size, r.time, r.rate, r.versus}; };
  for (int i = 0; i < 5; ++i) w[i] = std::string(head[i]).size();
  for (const Row& r : rows) {
    auto c = cells(r);
    for (int i = 0; i < 4; ++i) w[i] = std::max(w[i], c[size_t(i)].size());
  }
  auto line = [&](const std::vector<std::string>& c) {
    for (int i = 0; i < 5; ++i)
      os << "| " << c[size_t(i)] << std::string(i < 4 ? w[i] - c[size_t(i)].size() : 0, ' ') << " ";
    os << "|\n";
  };
  line({head[0], head[1], head[2], head[3], head[4]});
  line({std::string(w[0], '-'), std::string(w[1], '-'), std::string(w[2], '-'), std::string(w[3], '-'), "---"});
  for (const Row& r : rows) line(cells(r));
}

}  // namespace

int main() {
  if (!fx::cuda::is_available()) {
    std::printf("gpu_bench: SKIPPED: %s\n", fx::cuda::unavailable_reason().c_str());
    return 0;
  }
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("gpu_bench on cuda:0 = %s (%d SMs, %.0f GiB), TF32 %s\n", prop.name, prop.multiProcessorCount,
              static_cast<double>(prop.totalGlobalMem) / (1 << 30),
              std::getenv("FLUXION_CUDA_TF32") ? std::getenv("FLUXION_CUDA_TF32") : "off");
  const int64_t n = int64_t(1) << 24;  // W1's 16.7M elements
  const double copy_gbs = copy_bandwidth(n);
  elementwise_chain(n, copy_gbs);
  gemm_rows<float>(4096, 4096, 4096);
  gemm_rows<double>(2048, 2048, 2048);
  gemm_rows<float>(256, 1024, 512);
  latency_rows();
  std::ostringstream table;
  print_table(table);
  std::fputs(table.str().c_str(), stdout);
  if (const char* out = std::getenv("OUT"); out && *out) {
    std::string path = std::string(out) + "/gpu_bench.txt";
    if (FILE* f = std::fopen(path.c_str(), "w")) {
      std::fputs(table.str().c_str(), f);
      std::fclose(f);
    }
  }
  return 0;
}
