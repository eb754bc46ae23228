// Compile checks of the CUDA jit that need no GPU: the generated kernels of a sample of fused groups
// (f32 and f64 chains, rank-0 operands, conversions, comparisons, integers, a long chain, broadcasts
// read by index map, sums by a thread or a block per output over one or several layouts) compile to
// PTX with NVRTC for sm_80 and sm_90 without local memory, and ptxas reports no spills; every
// elementwise primitive's registry samples compile as generated kernels; compile errors carry
// NVRTC's log; the disk cache serves a later compile; and the fluxion_cuda library holds code for
// every architecture in CMAKE_CUDA_ARCHITECTURES (cuobjdump).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fluxion/fluxion.hpp"
#include "samples.hpp"

#ifdef FLUXION_WITH_CUDA
#include <unistd.h>

#include "backends/cuda/jit/fused_kernel.hpp"
#include "backends/cuda/jit/nvrtc_compiler.hpp"
#include "backends/cuda/jit/plan_runners.hpp"
#include "fluxion_jit_build_info.hpp"
#include "runtime/planner.hpp"

namespace fx = fluxion;
namespace rt = fluxion::runtime;
namespace jit = fluxion::cuda::jit;
using fluxion::testing::random_tensor;

namespace {

/// Plans with the CUDA jit's lowering slot and lowers nothing (no compile, no device).
struct PlanOnly final : rt::PlanRunner {
  const char* name() const override { return "plan only"; }
  const rt::Lowering& lowering() const override { return jit::fused_lowering(); }
  void run(const rt::Plan&, rt::RunState&) const override {}
};

using Program = std::function<std::vector<fx::Tensor>(const std::vector<fx::Tensor>&)>;

/// The generated kernels of the fused steps of `f`'s plan on `args`.
std::vector<jit::FusedKernel> kernels_of(const Program& f, const std::vector<fx::Tensor>& args) {
  static const PlanOnly planner;
  const fx::Jaxpr j = fx::make_jaxpr(f)(args);
  const rt::Plan plan = rt::make_plan(j, fx::Device::cpu(), planner);
  std::vector<jit::FusedKernel> out;
  for (const rt::Step& step : plan.steps)
    if (step.type == rt::Step::fused) out.push_back(jit::generate_fused_kernel(j, step));
  return out;
}

/// A sample of fused groups as kernels.
std::vector<jit::FusedKernel> sample_kernels() {
  std::vector<jit::FusedKernel> all;
  auto add = [&](const Program& f, const std::vector<fx::Tensor>& args) {
    for (jit::FusedKernel& k : kernels_of(f, args)) all.push_back(std::move(k));
  };
  for (fx::DType d : {fx::f32, fx::f64}) {
    // A chain of transcendental and arithmetic functors with two outputs.
    add(
        [](const std::vector<fx::Tensor>& a) {
          fx::Tensor t = fx::sin(a[0]) * a[1] + fx::exp(-a[0] * a[0]) / (1.0 + a[1] * a[1]);
          t = fx::tanh(t) - fx::maximum(a[0], a[1]) + fx::sqrt(fx::abs(a[1])) + fx::pow(fx::abs(t), a[0]);
          return std::vector<fx::Tensor>{t, fx::log1p(fx::abs(t)) * fx::atan2(a[0], a[1])};
        },
        {random_tensor({8, 128}, d, 1), random_tensor({8, 128}, d, 2)});
    // Rank-0 argument and literals broadcast over the group.
    add([](const std::vector<fx::Tensor>& a) { return std::vector<fx::Tensor>{fx::cos(a[0] * a[1] + 2.0) - a[1]}; },
        {random_tensor({1000}, d, 3), random_tensor({}, d, 4)});
    // A long chain: 40 steps, one kernel.
    add(
        [](const std::vector<fx::Tensor>& a) {
          fx::Tensor t = a[0];
          for (int k = 0; k < 40; ++k) t = k % 2 ? fx::sigmoid(t * 1.5 - a[1]) : fx::expm1(fx::tanh(t)) + t;
          return std::vector<fx::Tensor>{t};
        },
        {random_tensor({4096}, d, 5), random_tensor({4096}, d, 6)});
    // Broadcasts read by index map and sums ending the kernel: a bias along the last dim and a
    // scale along the first with row sums; a full sum of squares; one value summed over three
    // layouts (three loops, stored by the first); a rank-4 middle broadcast summed over the
    // middle dims; softmax's exp of x - max (max stays a kernel) and the division by the sums.
    add(
        [](const std::vector<fx::Tensor>& a) {
          const fx::Tensor h = fx::tanh(a[0] + a[1]) * fx::expand_dims(a[2], 1);
          return std::vector<fx::Tensor>{h, fx::sum(h, {1})};
        },
        {random_tensor({64, 48}, d, 10), random_tensor({48}, d, 11), random_tensor({64}, d, 12)});
    add([](const std::vector<fx::Tensor>& a) { return std::vector<fx::Tensor>{fx::sum(fx::square(a[0] - 0.5))}; },
        {random_tensor({100, 100}, d, 13)});
    add(
        [](const std::vector<fx::Tensor>& a) {
          const fx::Tensor y = fx::exp(a[0]) * a[0];
          return std::vector<fx::Tensor>{fx::sum(y), fx::sum(y, {1}), fx::sum(y, {0}), y};
        },
        {random_tensor({20, 30}, d, 14)});
    add(
        [](const std::vector<fx::Tensor>& a) {
          return std::vector<fx::Tensor>{fx::sum(fx::exp(a[0] * fx::expand_dims(a[1], {0, 2, 3})), {1, 2})};
        },
        {random_tensor({3, 4, 5, 6}, d, 15), random_tensor({4}, d, 16)});
    add(
        [](const std::vector<fx::Tensor>& a) {
          const fx::Tensor e = fx::exp(a[0] - fx::max(a[0], {1}, true));
          return std::vector<fx::Tensor>{e / fx::sum(e, {1}, true)};
        },
        {random_tensor({300, 17}, d, 17)});
  }
  // A conversion inside a group, comparisons to bool, integers.
  add(
      [](const std::vector<fx::Tensor>& a) {
        const fx::Tensor wide = fx::astype(fx::exp(a[0]) * 3.0f, fx::f64);
        return std::vector<fx::Tensor>{wide * wide + 1.0, fx::sin(a[0]) > fx::cos(a[0])};
      },
      {random_tensor({2, 600}, fx::f32, 7)});
  add(
      [](const std::vector<fx::Tensor>& a) {
        return std::vector<fx::Tensor>{fx::fmod((a[0] * 7 + a[1]) / (a[1] - 3), 5)};
      },
      {fx::astype(random_tensor({500}, fx::f64, 8, -100, 100), fx::i64),
       fx::astype(random_tensor({500}, fx::f64, 9, -100, 100), fx::i64)});
  return all;
}

/// Output of shell command `command` (stderr included) and its exit status.
std::string run_command(const std::string& command, int& status) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) {
    status = -1;
    return out;
  }
  char buffer[4096];
  while (size_t got = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, got);
  status = pclose(pipe);
  return out;
}

/// A fresh directory under $TMPDIR (or /tmp).
std::string temp_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/fluxion-jit-test-XXXXXX";
  REQUIRE(mkdtemp(&pattern[0]) != nullptr);
  return pattern;
}

}  // namespace

TEST_CASE("cuda jit compile: generated kernels compile to PTX for sm_80 and sm_90, no local memory, no spills") {
  const std::vector<int> archs = jit::nvrtc_architectures();
  MESSAGE("[cuda jit] NVRTC " << jit::nvrtc_version() << ", " << archs.size() << " architectures, " << archs.front()
                              << " to " << archs.back());
  const std::vector<jit::FusedKernel> kernels = sample_kernels();
  REQUIRE(kernels.size() >= 18);
  int broadcasts = 0, sums = 0, block_sums = 0;
  for (const jit::FusedKernel& k : kernels) {
    block_sums += k.block_sums;
    broadcasts += k.source.find("// broadcast_in_dim") != std::string::npos;
    sums += k.source.find("// reduce_sum") != std::string::npos;
  }
  CHECK(broadcasts >= 8);
  CHECK(sums >= 8);
  CHECK(block_sums >= 4);  // shared memory and __syncthreads: still no local memory, no spills
  const std::string ptxas = FLUXION_JIT_PTXAS;
  const std::string dir = temp_dir();
  for (const jit::FusedKernel& k : kernels) {
    CAPTURE(k.name);
    for (int arch : {80, 90}) {
      CAPTURE(arch);
      const std::string ptx = jit::compile_to_ptx(k.source, k.name, arch);
      CHECK(ptx.find(".visible .entry " + k.name) != std::string::npos);
      CHECK(ptx.find(".target sm_" + std::to_string(arch)) != std::string::npos);
      // Local memory only where CUDA's sin, cos and tan reduce huge arguments (a small array on that
      // rare path, by design): never from the generated code itself.
      const bool trig = k.source.find("Sin::apply") != std::string::npos ||
                        k.source.find("Cos::apply") != std::string::npos ||
                        k.source.find("Tan::apply") != std::string::npos;
      if (!trig) CHECK_MESSAGE(ptx.find(".local") == std::string::npos, "local memory in the PTX of\n" << k.source);
      if (ptxas.empty()) continue;
      // ptxas assembles it for the real architecture and reports registers and spills.
      const std::string file = dir + "/" + k.name + ".ptx";
      std::ofstream(file) << ptx;
      int status = 0;
      const std::string report =
          run_command("'" + ptxas + "' -arch=sm_" + std::to_string(arch) + " -v -o /dev/null '" + file + "'", status);
      std::remove(file.c_str());
      CHECK_MESSAGE(status == 0, report);
      CHECK_MESSAGE(report.find("0 bytes spill stores, 0 bytes spill loads") != std::string::npos, report);
      if (!trig) CHECK_MESSAGE(report.find(" 0 bytes stack frame") != std::string::npos, report);
    }
  }
  rmdir(dir.c_str());
  if (ptxas.empty()) MESSAGE("[cuda jit] ptxas not found at configure time: spills checked on the PTX only");
}

TEST_CASE("cuda jit compile: every elementwise primitive's functor compiles with NVRTC in every sampled dtype") {
  // The registry samples of each primitive the jit fuses (all dtypes they use, rank-0 operands,
  // literals), each followed by an identity that fuses with it, as generated kernels for sm_80.
  std::map<std::string, jit::FusedKernel> kernels;  // by name: one compile per distinct kernel
  for (const fx::Primitive* p : fx::all_primitives()) {
    if (!jit::fused_lowering().fuses(*p)) continue;
    auto it = fluxion::testing::sample_registry().find(p->name);
    if (it == fluxion::testing::sample_registry().end()) continue;
    for (fx::DType dt : {fx::f32, fx::f64})
      for (const fluxion::testing::Sample& sample : it->second.make(dt))
        for (jit::FusedKernel& k : kernels_of(
                 [&](const std::vector<fx::Tensor>& args) {
                   const fx::Tensor y = sample.fn(args)[0];
                   return std::vector<fx::Tensor>{y.dtype() == fx::boolean ? fx::lax::logical_not(y)
                                                                           : fx::lax::neg(fx::lax::neg(y))};
                 },
                 sample.inputs))
          kernels.emplace(k.name, std::move(k));
  }
  MESSAGE("[cuda jit] " << kernels.size() << " distinct kernels from the elementwise samples");
  CHECK(kernels.size() > 100);
  for (const auto& [name, k] : kernels) {
    CAPTURE(name);
    const std::string ptx = jit::compile_to_ptx(k.source, k.name, 80);
    CHECK(ptx.find(".visible .entry " + k.name) != std::string::npos);
  }
}

TEST_CASE("cuda jit compile: a compile error is a fluxion::Error carrying NVRTC's log") {
  const std::string source = "extern \"C\" __global__ void fx_broken(float* p) { p[0] = undefined_name; }\n";
  try {
    jit::compile_to_ptx(source, "fx_broken", 80);
    FAIL("a broken kernel compiled");
  } catch (const fx::Error& e) {
    const std::string what = e.what();
    CHECK_MESSAGE(what.find("NVRTC could not compile generated kernel fx_broken for compute_80") != std::string::npos,
                  what);
    CHECK_MESSAGE(what.find("undefined_name") != std::string::npos, what);  // the log
    // ... and where the source is kept, since the log cites its lines.
    const size_t at = what.find("The source is in ");
    REQUIRE_MESSAGE(at != std::string::npos, what);
    const std::string path = what.substr(at + 17, what.find(".cu", at) + 3 - (at + 17));
    std::ifstream kept(path);
    std::stringstream text;
    text << kept.rdbuf();
    CHECK(text.str() == source);
    std::remove(path.c_str());
  }
}

TEST_CASE("cuda jit compile: PTX is cached in memory, and on disk under FLUXION_CUDA_CACHE_DIR") {
  const std::vector<jit::FusedKernel> kernels = kernels_of(
      [](const std::vector<fx::Tensor>& a) { return std::vector<fx::Tensor>{fx::floor(a[0] * 0.75) + fx::ceil(a[0])}; },
      {random_tensor({300}, fx::f64, 10)});
  REQUIRE(kernels.size() == 1);
  const jit::FusedKernel& k = kernels[0];
  const std::string dir = temp_dir();
  REQUIRE(setenv("FLUXION_CUDA_CACHE_DIR", dir.c_str(), 1) == 0);
  struct Unset {
    ~Unset() { unsetenv("FLUXION_CUDA_CACHE_DIR"); }
  } unset;
  const int before = jit::nvrtc_compile_count();
  const std::string ptx = jit::compile_to_ptx(k.source, k.name, 86);
  CHECK(jit::nvrtc_compile_count() == before + 1);
  CHECK(jit::compile_to_ptx(k.source, k.name, 86) == ptx);  // memory
  CHECK(jit::nvrtc_compile_count() == before + 1);
  const std::string file = dir + "/" + k.name + ".nvrtc" + jit::nvrtc_version() + ".compute_86.ptx";
  CHECK(std::ifstream(file).good());
  jit::forget_compiled_ptx();
  CHECK(jit::compile_to_ptx(k.source, k.name, 86) == ptx);  // disk
  CHECK(jit::nvrtc_compile_count() == before + 1);
  // A damaged file is compiled again and replaced.
  std::ofstream(file, std::ios::trunc) << "// cut short";
  jit::forget_compiled_ptx();
  CHECK(jit::compile_to_ptx(k.source, k.name, 86) == ptx);
  CHECK(jit::nvrtc_compile_count() == before + 2);
  std::remove(file.c_str());
  rmdir(dir.c_str());
}

TEST_CASE("cuda jit compile: a device's architecture maps to the newest one NVRTC has at or below it") {
  CHECK(jit::architecture_for_device(8, 0) == 80);
  CHECK(jit::architecture_for_device(9, 0) == 90);
  CHECK(jit::architecture_for_device(8, 9) == 89);
  CHECK(jit::architecture_for_device(99, 9) == jit::nvrtc_architectures().back());  // a future GPU: PTX
  CHECK_THROWS_AS(jit::architecture_for_device(1, 0), fx::DeviceError);
}

TEST_CASE("cuda jit compile: fluxion_cuda holds code for every architecture in CMAKE_CUDA_ARCHITECTURES") {
  const std::string cuobjdump = FLUXION_JIT_CUOBJDUMP, library = FLUXION_JIT_CUDA_LIBRARY;
  if (cuobjdump.empty()) {
    MESSAGE("skipped: cuobjdump was not found at configure time (set FLUXION_CUOBJDUMP to its path)");
    return;
  }
  int status = 0;
  const std::string listing = run_command("'" + cuobjdump + "' --list-elf '" + library + "'", status);
  REQUIRE_MESSAGE(status == 0, listing);
  std::stringstream archs(FLUXION_JIT_CUDA_ARCHITECTURES);
  std::string arch;
  int checked = 0;
  while (std::getline(archs, arch, ';')) {
    if (arch.find("-virtual") != std::string::npos) continue;  // PTX only: no ELF
    if (arch == "native" || arch == "all" || arch == "all-major") {
      MESSAGE("skipped: CMAKE_CUDA_ARCHITECTURES=" << arch << " names no list to check");
      return;
    }
    arch = arch.substr(0, arch.find('-'));
    CAPTURE(arch);
    CHECK_MESSAGE(listing.find(".sm_" + arch + ".") != std::string::npos, listing);
    ++checked;
  }
  CHECK(checked > 0);
}

namespace {

/// One entry of a CUDA fat binary: PTX (kind 1) or an ELF cubin (kind 2) for architecture `arch`
/// (80 for sm_80 / compute_80).
struct FatbinEntry {
  int kind = 0, arch = 0;
  bool operator<(const FatbinEntry& o) const { return kind != o.kind ? kind < o.kind : arch < o.arch; }
  bool operator==(const FatbinEntry& o) const { return kind == o.kind && arch == o.arch; }
};

template <class T> T read_le(const std::string& bytes, size_t at) {
  T v{};
  std::memcpy(&v, bytes.data() + at, sizeof(T));  // x86-64 and aarch64 hosts are little-endian
  return v;
}

/// The entries of every fat binary embedded in `bytes` (an object file or a static library of
/// them), one set per fat binary. The layout, as nvcc writes it (a header: magic 0xBA55ED50,
/// u16 version, u16 header size, u64 size of the entries; each entry: u16 kind, u16, u32 header
/// size, u64 payload size, ..., u32 architecture at offset 28), was checked against objects built
/// with known architectures, where cuobjdump is not installed.
std::vector<std::set<FatbinEntry>> fatbin_entries(const std::string& bytes) {
  std::vector<std::set<FatbinEntry>> found;
  for (size_t at = 0; at + 16 <= bytes.size(); ++at) {
    if (read_le<uint32_t>(bytes, at) != 0xBA55ED50u || read_le<uint16_t>(bytes, at + 6) != 16) continue;
    const uint64_t size = read_le<uint64_t>(bytes, at + 8);
    if (size > bytes.size() - at - 16) continue;
    std::set<FatbinEntry> entries;
    for (size_t p = at + 16; p + 32 <= at + 16 + size;) {
      const uint32_t header = read_le<uint32_t>(bytes, p + 4);
      const uint64_t payload = read_le<uint64_t>(bytes, p + 8);
      if (header < 32 || header + payload > at + 16 + size - p) break;
      entries.insert({read_le<uint16_t>(bytes, p), static_cast<int>(read_le<uint32_t>(bytes, p + 28))});
      p += header + payload;
    }
    found.push_back(std::move(entries));
    at += 15 + size;
  }
  return found;
}

}  // namespace

TEST_CASE("cuda jit compile: every fat binary in fluxion_cuda holds SASS (and PTX) for the requested architectures") {
  std::ifstream in(FLUXION_JIT_CUDA_LIBRARY, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << FLUXION_JIT_CUDA_LIBRARY);
  std::stringstream bytes;
  bytes << in.rdbuf();
  // "80-real": SASS for sm_80; "90": SASS and PTX; "90-virtual": PTX only.
  std::set<FatbinEntry> want;
  std::stringstream archs(FLUXION_JIT_CUDA_ARCHITECTURES);
  for (std::string arch; std::getline(archs, arch, ';');) {
    if (arch == "native" || arch == "all" || arch == "all-major") {
      MESSAGE("skipped: CMAKE_CUDA_ARCHITECTURES=" << arch << " names no list to check");
      return;
    }
    const int number = std::stoi(arch.substr(0, arch.find('-')));
    if (arch.find("-virtual") == std::string::npos) want.insert({2, number});
    if (arch.find("-real") == std::string::npos) want.insert({1, number});
  }
  const std::vector<std::set<FatbinEntry>> fatbins = fatbin_entries(bytes.str());
  CHECK(fatbins.size() >= 3);  // one per CUDA translation unit of the backend
  for (const std::set<FatbinEntry>& entries : fatbins) {
    std::ostringstream listing;
    for (const FatbinEntry& e : entries) listing << (e.kind == 1 ? " ptx:" : " sm_") << e.arch;
    CAPTURE(listing.str());
    CHECK(entries == want);
  }
  MESSAGE("[cuda jit] " << fatbins.size() << " fat binaries in fluxion_cuda, each with " << want.size()
                        << " entries for " FLUXION_JIT_CUDA_ARCHITECTURES);
}

#else

TEST_CASE("cuda jit compile: skipped") {
  MESSAGE("skipped: this build has no CUDA backend, so no NVRTC (FLUXION_CUDA=OFF or no nvcc)");
}

#endif
