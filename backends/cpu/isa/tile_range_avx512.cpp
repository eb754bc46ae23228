// The AVX-512 variant of the register-program loop (backends/cpu/isa.hpp: why it is safe to link
// beside the baseline code). Compiled with -mavx512f/dq/vl/bw and -mfma (Eigen's AVX-512 code requires
// FMA): it runs only programs without multiply-adds, whose values are then the baseline's bits (the
// dispatch in tile_range.cpp). Only portable builds compile it (CMakeLists.txt).
#if !defined(__AVX512F__) || !defined(__AVX512DQ__) || !defined(__FMA__)
#error "tile_range_avx512.cpp is compiled with -mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma (CMakeLists.txt)"
#endif
// Before any header: this translation unit's own copy of Eigen, under a name no other unit uses.
#define Eigen fluxion_eigen_avx512
#define FLUXION_ISA_VARIANT avx512  // packet helpers inlined (special_functions.hpp)
#include "backends/cpu/tile_range.hpp"

namespace fluxion::cpu::isa_avx512 {

struct Variant {};

int64_t run_whole_tiles_f32(const TileInstr* program, int count, char* const* bases, void* slots, double* totals,
                            int n_sums, int64_t e0, int64_t e1) {
  return run_whole_tiles<float, Variant>(program, count, bases, slots, totals, n_sums, e0, e1);
}
int64_t run_whole_tiles_f64(const TileInstr* program, int count, char* const* bases, void* slots, double* totals,
                            int n_sums, int64_t e0, int64_t e1) {
  return run_whole_tiles<double, Variant>(program, count, bases, slots, totals, n_sums, e0, e1);
}

}  // namespace fluxion::cpu::isa_avx512
