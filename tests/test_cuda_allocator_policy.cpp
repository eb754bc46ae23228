// The out-of-memory policy of the CUDA allocator (src/allocator.hpp, device_memory), driven on the
// CPU with fake allocation attempts: the device allocator runs the same template with
// cudaMallocFromPoolAsync, a stream synchronise + cudaMemPoolTrimTo, and the pool's counters.
#include <doctest/doctest.h>

#include <fluxion/fluxion.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "src/allocator.hpp"

namespace fx = fluxion;
using fx::device_memory::Attempt;
using fx::device_memory::Held;

namespace {

// A fake device: `attempts` answers in order; every call and release is logged.
struct FakeDevice {
  std::vector<Attempt> answers;
  std::vector<std::string> log;
  Held held_after_release{};

  void allocate(int64_t nbytes) {
    size_t next = 0;
    fx::device_memory::allocate_or_throw(
        fx::Device::cuda(1), nbytes,
        [&] {
          log.push_back("try");
          return answers.at(next++);
        },
        [&] { log.push_back("release"); }, [&] { return held_after_release; });
  }
};

}  // namespace

TEST_CASE("cuda allocator policy: a first success neither releases the cache nor retries") {
  FakeDevice d{{Attempt::ok}};
  d.allocate(1024);
  CHECK(d.log == std::vector<std::string>{"try"});
}

TEST_CASE("cuda allocator policy: out of memory releases the cache and tries once more") {
  FakeDevice d{{Attempt::out_of_memory, Attempt::ok}};
  d.allocate(1 << 20);
  CHECK(d.log == std::vector<std::string>{"try", "release", "try"});
}

TEST_CASE("cuda allocator policy: out of memory twice is an OutOfMemoryError saying what was asked and held") {
  FakeDevice d{{Attempt::out_of_memory, Attempt::out_of_memory, Attempt::ok}};
  d.held_after_release = {int64_t(3) << 30, int64_t(5) << 29};
  std::string what;
  try {
    d.allocate(int64_t(1) << 34);
  } catch (const fx::OutOfMemoryError& e) { what = e.what(); }
  // Exactly one release and one retry: the third answer is never asked for.
  CHECK(d.log == std::vector<std::string>{"try", "release", "try"});
  CAPTURE(what);
  CHECK(what.rfind("[cuda] could not allocate 17179869184 bytes on cuda:1: ", 0) == 0);
  CHECK(what.find("holds 3221225472 bytes there, 2684354560 of them in live tensors") != std::string::npos);
  CHECK(what.find("Free tensors you no longer need") != std::string::npos);
}

TEST_CASE("cuda allocator policy: other CUDA failures propagate from the attempt unchanged") {
  int releases = 0;
  CHECK_THROWS_AS(fx::device_memory::allocate_or_throw(
                      fx::Device::cuda(0), 64, []() -> Attempt { throw fx::DeviceError("[cuda] broken driver"); },
                      [&] { ++releases; }, [] { return Held{}; }),
                  fx::DeviceError);
  CHECK(releases == 0);
}

TEST_CASE("cuda allocator policy: the device cache's cap follows FLUXION_ALLOCATOR_CACHE_BYTES") {
  const char* old = std::getenv("FLUXION_ALLOCATOR_CACHE_BYTES");
  const std::string saved = old ? old : "";
  ::setenv("FLUXION_ALLOCATOR_CACHE_BYTES", "12345", 1);
  CHECK(fx::device_memory::cache_limit(99) == 12345);
  ::setenv("FLUXION_ALLOCATOR_CACHE_BYTES", "0", 1);
  CHECK(fx::device_memory::cache_limit(99) == 0);  // 0: nothing kept after a synchronisation
  ::setenv("FLUXION_ALLOCATOR_CACHE_BYTES", "12k", 1);
  CHECK(fx::device_memory::cache_limit(99) == 99);  // not a plain number: the default
  ::unsetenv("FLUXION_ALLOCATOR_CACHE_BYTES");
  CHECK(fx::device_memory::cache_limit(99) == 99);
  if (old) ::setenv("FLUXION_ALLOCATOR_CACHE_BYTES", saved.c_str(), 1);
}

TEST_CASE("release_cached_memory covers every device and never fails without a GPU") {
  fx::Tensor x = fx::ones({1000});
  x = fx::Tensor();
  CHECK(fx::release_cached_memory() >= 0);
  CHECK(fx::cuda::memory::release_cached() >= 0);
  if (!fx::cuda::is_available()) CHECK(fx::cuda::memory::release_cached() == 0);
}
