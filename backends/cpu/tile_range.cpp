// run_tile_range: the baseline variant of the register-program loop and the dispatch to the
// AVX2 and AVX-512 variants (backends/cpu/isa/, compiled only in portable builds: isa.hpp).
#include "backends/cpu/tile_range.hpp"

#include "fluxion/config.hpp"

namespace fluxion::cpu {

#if defined(FLUXION_ISA_DISPATCH)
namespace isa_avx2 {
int64_t run_whole_tiles_f32(const TileInstr*, int, char* const*, void*, double*, int, int64_t, int64_t);
int64_t run_whole_tiles_f64(const TileInstr*, int, char* const*, void*, double*, int, int64_t, int64_t);
}  // namespace isa_avx2
namespace isa_avx512 {
int64_t run_whole_tiles_f32(const TileInstr*, int, char* const*, void*, double*, int, int64_t, int64_t);
int64_t run_whole_tiles_f64(const TileInstr*, int, char* const*, void*, double*, int, int64_t, int64_t);
}  // namespace isa_avx512
#endif

int64_t run_tile_range(DType dtype, bool uses_madd, const TileInstr* program, int count, char* const* bases,
                       void* slots, double* totals, int n_sums, int64_t e0, int64_t e1) {
#if FLUXION_LIGHT_KERNELS
  // Light kernels compile no register programs (compile_tile_program), nor their Eigen packet code.
  (void)dtype, (void)uses_madd, (void)program, (void)count, (void)bases, (void)slots, (void)totals, (void)n_sums;
  (void)e1;
  return e0;
#else
  const bool f32_program = dtype == f32;
  WholeTilesFn run = f32_program ? &run_whole_tiles<float, void> : &run_whole_tiles<double, void>;
#if defined(FLUXION_ISA_DISPATCH)
  Isa isa = active_isa();
  if (isa == Isa::avx512 && uses_madd) isa = Isa::avx2;
  if (isa == Isa::avx512) run = f32_program ? &isa_avx512::run_whole_tiles_f32 : &isa_avx512::run_whole_tiles_f64;
  if (isa == Isa::avx2) run = f32_program ? &isa_avx2::run_whole_tiles_f32 : &isa_avx2::run_whole_tiles_f64;
#else
  (void)uses_madd;
#endif
  return run(program, count, bases, slots, totals, n_sums, e0, e1);
#endif
}

}  // namespace fluxion::cpu
