// compile_to_ptx: the in-memory cache under a mutex, the disk cache (written to a temporary file,
// then renamed, so readers never see half a file), and NVRTC itself.
#include "backends/cuda/jit/nvrtc_compiler.hpp"

#include <nvrtc.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include "backends/cuda/jit/fused_kernel.hpp"
#include "fluxion/errors.hpp"

#include <unistd.h>

namespace fluxion::cuda::jit {

namespace nvrtc_detail {

std::atomic<int> compiles{0};

void check(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS)
    detail::fail<Error>("jit", call, " failed: ", nvrtcGetErrorString(r), ". The CUDA toolkit's NVRTC may be broken.");
}

/// Owns an nvrtcProgram.
struct Program {
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle) nvrtcDestroyProgram(&handle);
  }
};

std::string log_of(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0) return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, &log[0]) != NVRTC_SUCCESS) return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::string compile(const std::string& source, const std::string& name, int arch) {
  ++compiles;
  Program program;
  check(nvrtcCreateProgram(&program.handle, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  const std::string gpu = "--gpu-architecture=compute_" + std::to_string(arch);
  const char* options[] = {gpu.c_str(), "-default-device", "-std=c++17", "--fmad=false"};
  const nvrtcResult r = nvrtcCompileProgram(program.handle, 4, options);
  if (r != NVRTC_SUCCESS) {
    const std::string kept = keep_failed_source(name + ".cu", source);
    detail::fail<Error>("jit", "NVRTC could not compile generated kernel ", name, " for compute_", arch, " (",
                        nvrtcGetErrorString(r), "):\n", log_of(program.handle), "\nThe source is ",
                        kept.empty() ? std::string("not kept (TMPDIR is not writable)") : "in " + kept,
                        ". This is a bug in the CUDA jit's code generation or the shared functors: please report it"
                        " with that file.");
  }
  size_t size = 0;
  check(nvrtcGetPTXSize(program.handle, &size), "nvrtcGetPTXSize");
  std::string ptx(size, '\0');
  check(nvrtcGetPTX(program.handle, &ptx[0]), "nvrtcGetPTX");
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

/// The disk cache's file of a kernel, or "" when FLUXION_CUDA_CACHE_DIR is unset or empty.
std::string cache_file(const std::string& name, int arch) {
  const char* dir = std::getenv("FLUXION_CUDA_CACHE_DIR");
  if (!dir || !*dir) return {};
  return std::string(dir) + "/" + name + ".nvrtc" + nvrtc_version() + ".compute_" + std::to_string(arch) + ".ptx";
}

/// A cached PTX file's text, or "" when absent or not the PTX of kernel `name` (a file cut short
/// or from something else is compiled again and replaced).
std::string read_cached(const std::string& path, const std::string& name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  std::string ptx = text.str();
  const bool whole = ptx.find(".entry " + name) != std::string::npos && ptx.rfind('}') != std::string::npos;
  return whole ? ptx : std::string();
}

/// Writes the cache file (best effort: an unwritable directory only costs compiles).
void write_cached(const std::string& path, const std::string& ptx) {
  // Unique per process and per write: threads or processes writing the same kernel never share one.
  static std::atomic<int> writes{0};
  const std::string tmp = path + ".tmp" + std::to_string(static_cast<long>(getpid())) + "." + std::to_string(++writes);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out << ptx;
    if (!out.flush()) {
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

struct MemoryCache {
  std::mutex mutex;
  std::map<std::pair<std::string, int>, std::string> ptx;  // (kernel name, arch)
};
MemoryCache& memory_cache() {
  static MemoryCache cache;
  return cache;
}

}  // namespace nvrtc_detail

std::string compile_to_ptx(const std::string& source, const std::string& name, int arch) {
  using namespace nvrtc_detail;
  MemoryCache& cache = memory_cache();
  const auto key = std::make_pair(name, arch);
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.ptx.find(key);
    if (it != cache.ptx.end()) return it->second;
  }
  // Compiled outside the lock: other kernels compile meanwhile; two threads compiling the same one
  // store the same text.
  const std::string path = cache_file(name, arch);
  std::string ptx = path.empty() ? std::string() : read_cached(path, name);
  if (ptx.empty()) {
    ptx = compile(source, name, arch);
    if (!path.empty()) write_cached(path, ptx);
  }
  std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.ptx.emplace(key, std::move(ptx)).first->second;
}

std::vector<int> nvrtc_architectures() {
  int count = 0;
  nvrtc_detail::check(nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<size_t>(count));
  if (count > 0) nvrtc_detail::check(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  return archs;
}

int architecture_for_device(int major, int minor) {
  const int device = major * 10 + minor;
  int best = 0;
  for (int arch : nvrtc_architectures())
    if (arch <= device && arch > best) best = arch;
  if (best == 0)
    detail::fail<DeviceError>("jit", "NVRTC ", nvrtc_version(), " compiles for no architecture a device of compute ",
                              "capability ", major, ".", minor, " runs. Use a newer GPU or an older CUDA toolkit.");
  return best;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtc_detail::check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

int nvrtc_compile_count() { return nvrtc_detail::compiles.load(); }

void forget_compiled_ptx() {
  nvrtc_detail::MemoryCache& cache = nvrtc_detail::memory_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  cache.ptx.clear();
}

}  // namespace fluxion::cuda::jit
