// The AVX2 variant of the register-program loop (backends/cpu/isa.hpp: why it is safe to link
// beside the baseline code). Compiled with -mavx2 and without FMA, so its values are the baseline's
// bits; only portable builds compile it (CMakeLists.txt).
#if !defined(__AVX2__) || defined(__FMA__)
#error "tile_range_avx2.cpp is compiled with -mavx2 and without -mfma (CMakeLists.txt)"
#endif
// Before any header: this translation unit's own copy of Eigen, under a name no other unit uses.
#define Eigen fluxion_eigen_avx2
#define FLUXION_ISA_VARIANT avx2  // packet helpers inlined (special_functions.hpp)
#include "backends/cpu/tile_range.hpp"

namespace fluxion::cpu::isa_avx2 {

struct Variant {};

int64_t run_whole_tiles_f32(const TileInstr* program, int count, char* const* bases, void* slots, double* totals,
                            int n_sums, int64_t e0, int64_t e1) {
  return run_whole_tiles<float, Variant>(program, count, bases, slots, totals, n_sums, e0, e1);
}
int64_t run_whole_tiles_f64(const TileInstr* program, int count, char* const* bases, void* slots, double* totals,
                            int n_sums, int64_t e0, int64_t e1) {
  return run_whole_tiles<double, Variant>(program, count, bases, slots, totals, n_sums, e0, e1);
}

}  // namespace fluxion::cpu::isa_avx2
