// compile_for_host: the source written to a private temporary directory, compiled there, loaded,
// and the files removed (the loaded library stays mapped). Libraries are never unloaded: plans
// hold their entries for the life of the process.
#include "backends/cuda/jit/host_compiler.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "fluxion/errors.hpp"
#include "fluxion_jit_build_info.hpp"

namespace fluxion::cuda::jit {

namespace host_compiler_detail {

std::atomic<int> compiles{0};

// CUDA's kernel keywords and built-in thread indices for one host thread running a launch: the
// kernel is called once per (block, thread), each call striding over the elements as on a GPU.
// Kernels that synchronize their blocks (FusedKernel::block_sums) run each block's threads as
// host threads meeting at a barrier for __syncthreads; their __shared__ arrays are static, so
// launches of one such kernel take turns.
const char* const kEmulationHeader = R"fx_emulation(// Emulation of a CUDA launch on the host.
#include <math.h>
#include <cmath>
#include <cstdint>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
struct fluxion_jit_dim3 { unsigned x = 0, y = 0, z = 0; };
static thread_local fluxion_jit_dim3 threadIdx, blockIdx, blockDim, gridDim;
template <class Thread> static void fluxion_jit_emulate_grid(unsigned grid, unsigned block, const Thread& thread) {
  gridDim = {grid, 1, 1};
  blockDim = {block, 1, 1};
  for (unsigned b = grid; b-- > 0;) {  // the last block first, as EmulatedExec
    blockIdx = {b, 0, 0};
    for (unsigned t = 0; t < block; ++t) {
      threadIdx = {t, 0, 0};
      thread();
    }
  }
}
)fx_emulation";

// What kernels that synchronize their blocks add to the emulation header.
const char* const kSyncedEmulation = R"fx_emulation(// Blocks whose threads meet at __syncthreads.
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>
struct fluxion_jit_barrier {
  std::mutex m;
  std::condition_variable cv;
  unsigned threads = 0, arrived = 0, generation = 0;
};
static thread_local fluxion_jit_barrier* fluxion_jit_block_barrier = nullptr;
static void __syncthreads() {
  fluxion_jit_barrier& b = *fluxion_jit_block_barrier;
  std::unique_lock<std::mutex> lock(b.m);
  const unsigned generation = b.generation;
  if (++b.arrived == b.threads) {
    b.arrived = 0;
    ++b.generation;
    b.cv.notify_all();
  } else {
    b.cv.wait(lock, [&] { return b.generation != generation; });
  }
}
template <class Thread>
static void fluxion_jit_emulate_synced_grid(unsigned grid, unsigned block, const Thread& thread) {
  static std::mutex turns;  // one launch of this kernel at a time: its __shared__ arrays are static
  std::lock_guard<std::mutex> turn(turns);
  for (unsigned b = grid; b-- > 0;) {  // the last block first, as EmulatedExec
    fluxion_jit_barrier barrier;
    barrier.threads = block;
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < block; ++t)
      threads.emplace_back([&, b, t] {
        gridDim = {grid, 1, 1};
        blockDim = {block, 1, 1};
        blockIdx = {b, 0, 0};
        threadIdx = {t, 0, 0};
        fluxion_jit_block_barrier = &barrier;
        thread();
      });
    for (std::thread& t : threads) t.join();
  }
}
)fx_emulation";

std::string compiler() {
  const char* env = std::getenv("FLUXION_JIT_HOST_CXX");
  return env && *env ? env : FLUXION_JIT_HOST_CXX;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A private directory for one compile, removed with its files when done.
struct TempDir {
  std::string path;
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/fluxion-jit-XXXXXX";
    if (mkdtemp(&pattern[0])) path = pattern;
  }
  ~TempDir() {
    if (path.empty()) return;
    for (const char* f : {"/kernel.cpp", "/kernel.so", "/log.txt"}) std::remove((path + f).c_str());
    rmdir(path.c_str());
  }
};

EmulatedEntry compile(const FusedKernel& kernel) {
  ++compiles;
  TempDir dir;
  if (dir.path.empty())
    detail::fail<Error>("jit", "cannot create a temporary directory for emulated kernel ", kernel.name,
                        ". Set TMPDIR to a writable directory.");
  const std::string cpp = dir.path + "/kernel.cpp", so = dir.path + "/kernel.so", log = dir.path + "/log.txt";
  {
    std::ofstream out(cpp);
    out << kEmulationHeader << (kernel.block_sums ? kSyncedEmulation : "") << kernel.source << "\n"
        << emulation_entry(kernel);
    if (!out.flush()) detail::fail<Error>("jit", "cannot write ", cpp, ". Set TMPDIR to a writable directory.");
  }
  const std::string command = "'" + compiler() + "' -std=c++17 -O1 -ffp-contract=off -fPIC -shared -pthread -w -o '" +
                              so + "' '" + cpp + "' > '" + log + "' 2>&1";
  const int status = std::system(command.c_str());
  if (status != 0) {
    const std::string kept = keep_failed_source(kernel.name + ".emulated.cpp", read_file(cpp));
    detail::fail<Error>("jit", "the host compiler could not compile emulated kernel ", kernel.name, " (", command,
                        " exited with ", status, "):\n", read_file(log), "\nThe source is ",
                        kept.empty() ? std::string("not kept (TMPDIR is not writable)") : "in " + kept,
                        ". Set FLUXION_JIT_HOST_CXX to a working C++17 compiler.");
  }
  void* library = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) detail::fail<Error>("jit", "dlopen of emulated kernel ", kernel.name, " failed: ", dlerror(), ".");
  void* entry = dlsym(library, (kernel.name + "_emulate").c_str());
  if (!entry) detail::fail<Error>("jit", "emulated kernel ", kernel.name, " has no entry: ", dlerror(), ".");
  return reinterpret_cast<EmulatedEntry>(entry);
}

}  // namespace host_compiler_detail

EmulatedEntry compile_for_host(const FusedKernel& kernel) {
  static std::mutex mutex;
  static std::map<std::string, EmulatedEntry> entries;  // by kernel name (a hash of the source)
  // One lock over the compile: emulation is for tests, where compiles are few.
  std::lock_guard<std::mutex> lock(mutex);
  auto it = entries.find(kernel.name);
  if (it != entries.end()) return it->second;
  EmulatedEntry entry = host_compiler_detail::compile(kernel);
  entries.emplace(kernel.name, entry);
  return entry;
}

const char* emulation_header() { return host_compiler_detail::kEmulationHeader; }

int host_compile_count() { return host_compiler_detail::compiles.load(); }

}  // namespace fluxion::cuda::jit
