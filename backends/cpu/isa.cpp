// CPU feature detection and the variant choice (backends/cpu/isa.hpp).
#include "backends/cpu/isa.hpp"

#include <atomic>
#include <cstdlib>

#include "fluxion/errors.hpp"

namespace fluxion::cpu {

namespace isa_detail {

// The variants this library holds: FLUXION_ISA_DISPATCH is defined (CMakeLists.txt) when the
// library is portable and compiles backends/cpu/isa/*.cpp; header-only mode never defines it.
#if defined(FLUXION_ISA_DISPATCH) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
Isa detect() {
  // libgcc's checks include the OS's support (XGETBV): AVX state saved for avx2, opmask and ZMM
  // state for the avx512 flags.
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
  if (avx512) return Isa::avx512;
  return __builtin_cpu_supports("avx2") ? Isa::avx2 : Isa::baseline;
}
#else
Isa detect() { return Isa::baseline; }
#endif

// Isa values + 1; 0: not chosen yet.
std::atomic<int> chosen{0};

Isa checked(Isa isa, const char* where) {
  if (static_cast<int>(isa) > static_cast<int>(supported_isa())) {
    detail::fail<DeviceError>(where, "the ", isa_name(isa),
                              " kernels cannot run here: this library with this CPU supports ",
                              isa_name(supported_isa()), " at most", ". Ask for ", isa_name(supported_isa()),
                              " or a narrower variant (FLUXION_ISA=baseline runs everywhere).");
  }
  return isa;
}

}  // namespace isa_detail

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    default: return "baseline";
  }
}

Isa parse_isa(const std::string& name) {
  for (Isa isa : {Isa::baseline, Isa::avx2, Isa::avx512}) {
    if (name == isa_name(isa)) return isa;
  }
  detail::fail<Error>("FLUXION_ISA", "unknown instruction set '", name, "'",
                      ". Use baseline, avx2 or avx512 (or leave FLUXION_ISA unset for the best one).");
}

Isa supported_isa() {
  static const Isa isa = isa_detail::detect();
  return isa;
}

Isa active_isa() {
  const int chosen = isa_detail::chosen.load(std::memory_order_relaxed);
  if (chosen != 0) return static_cast<Isa>(chosen - 1);
  Isa isa = supported_isa();
  if (const char* env = std::getenv("FLUXION_ISA"); env != nullptr && *env != '\0') {
    isa = isa_detail::checked(parse_isa(env), "FLUXION_ISA");
  }
  isa_detail::chosen.store(static_cast<int>(isa) + 1, std::memory_order_relaxed);
  return isa;
}

void set_isa(Isa isa) {
  isa_detail::chosen.store(static_cast<int>(isa_detail::checked(isa, "set_isa")) + 1, std::memory_order_relaxed);
}

}  // namespace fluxion::cpu
