/// Run-time choice of the vector instruction set for the CPU kernels compiled in several variants.
///
/// A portable build (FLUXION_NATIVE=OFF, the default) compiles the library for baseline x86-64
/// (SSE2) and compiles the hot loop of fused elementwise groups and their sums (the register
/// programs: backends/cpu/tile_range.hpp) again for AVX2 and for AVX-512, each in its own translation
/// unit (backends/cpu/isa/). The first run picks the best variant that the CPU and the OS support
/// (CPUID), lowered by FLUXION_ISA=baseline|avx2|avx512 or set_isa. A native build (its baseline
/// is the building machine's ISA) and header-only mode compile the baseline variant only.
///
/// Why no variant's code reaches baseline callers (the ODR hazard of per-ISA translation units):
/// an inline function or template instance that two translation units emit is one weak symbol,
/// and the linker keeps one of the copies, possibly the AVX-512 one, for every caller. So a variant's
/// translation unit renames Eigen's namespace (Eigen is header-only: nothing to link against) and
/// instantiates the kernels with its own `Variant` tag type: every function it emits has a name that
/// no other translation unit uses. The packaging test (scripts/check_isa.sh) disassembles the library
/// and fails on any AVX or AVX-512 instruction in a function without such a name.
///
/// The variant never changes an elementwise value: the AVX2 variant is compiled without FMA (Eigen's
/// pmadd is then a rounded multiply and an add, as in SSE2), and programs with multiply-add
/// polynomials (exp, log, tanh) never run on the AVX-512 variant (Eigen's AVX-512 code requires FMA,
/// which would give other bits than the eager kernels). Sums add their lanes in another order (more
/// lanes), as a native build does.
#pragma once
#include <cstdint>
#include <string>

#include "backends/cpu/lowering.hpp"

/// FLUXION_ISA_CLONES on a leaf loop of plain C++ (no Eigen packets, no multiply-adds: the
/// clones give its bits) compiles it for baseline, AVX2 (x86-64-v3) and AVX-512 (x86-64-v4); the
/// loader picks one by CPUID (GCC's target_clones: the clones and their resolver have names of
/// their own, so no baseline caller is linked to them). The loader's choice: FLUXION_ISA does not
/// apply. Portable GCC builds of the library only: header-only mode (clang-repl's JIT has no ifunc)
/// and native builds compile the one version.
#if defined(FLUXION_ISA_DISPATCH) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define FLUXION_ISA_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define FLUXION_ISA_CLONES
#endif

namespace fluxion::cpu {

/// The variants, in increasing order of width.
enum class Isa : uint8_t { baseline, avx2, avx512 };

/// "baseline", "avx2" or "avx512".
const char* isa_name(Isa isa);
/// The Isa that FLUXION_ISA spells `name`; throws fluxion::Error listing the names otherwise.
Isa parse_isa(const std::string& name);
/// The widest variant this library holds that the CPU and OS support (baseline where the library
/// holds no variants: native builds, header-only mode, other architectures).
Isa supported_isa();
/// The variant the dispatched kernels run: supported_isa(), or what FLUXION_ISA (read on the first
/// call; an unsupported or unknown value throws fluxion::Error) or set_isa chose. A cheap load.
Isa active_isa();
/// Runs the dispatched kernels with `isa` from now on (tests and A/B runs compare the variants in
/// one process). Throws DeviceError when `isa` is wider than supported_isa().
void set_isa(Isa isa);

/// Eager elementwise kernels in the variants (backends/cpu/elementwise.hpp): applies `op` (a
/// register-program operation: unary to a, binary to a and b, where a rank-0 operand, a_scalar or
/// b_scalar, is one value) to the whole tiles of out[0, n) with the active variant, through the
/// register programs (tile_range.cpp); returns how many elements it wrote, from the first: 0 with
/// the baseline variant or under a few thousand elements, whose kernels are the callers' own.
int64_t dispatched_elementwise(DType dtype, TileOp op, const void* a, bool a_scalar, const void* b, bool b_scalar,
                               void* out, int64_t n);

}  // namespace fluxion::cpu
