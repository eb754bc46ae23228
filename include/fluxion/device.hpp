/// Devices: where a buffer lives and which backend runs kernels on it.
#pragma once
#include <ostream>

namespace fluxion {

/// A device: the CPU (default) or CUDA GPU number `index`.
struct Device {
  enum class Kind : uint8_t { cpu = 0, cuda = 1 };
  Kind kind = Kind::cpu;
  int index = 0;

  static Device cpu() { return Device{}; }
  static Device cuda(int index = 0) { return Device{Kind::cuda, index}; }
  bool is_cpu() const { return kind == Kind::cpu; }
  bool is_cuda() const { return kind == Kind::cuda; }
  friend bool operator==(Device a, Device b) { return a.kind == b.kind && a.index == b.index; }
  friend bool operator!=(Device a, Device b) { return !(a == b); }
};

/// Prints "cpu" or "cuda:0".
inline std::ostream& operator<<(std::ostream& os, Device d) {
  if (d.is_cpu()) return os << "cpu";
  return os << "cuda:" << d.index;
}

/// Threads that large CPU kernels (GEMM) use: set_num_threads, else $FLUXION_NUM_THREADS, else all cores.
int num_threads();
/// Sets the threads of large CPU kernels and fused groups (Fluxion's thread pool); n <= 0 restores the default.
void set_num_threads(int n);

/// Which kernel table runs an op: the naive reference loops, the CPU (Eigen) kernels, CUDA, or
/// cuda_emulated: the CUDA backend's kernel bodies run over their grid on the CPU, on CPU tensors
/// (the CUDA kernels' logic tested where there is no GPU; backends/cuda/kernels/).
enum class Backend : uint8_t { reference = 0, cpu = 1, cuda = 2, cuda_emulated = 3 };
inline constexpr int kNumBackends = 4;
inline const char* backend_name(Backend b) {
  switch (b) {
    case Backend::reference: return "reference";
    case Backend::cpu: return "cpu";
    case Backend::cuda: return "cuda";
    case Backend::cuda_emulated: return "cuda_emulated";
  }
  return "unknown";
}

}  // namespace fluxion
