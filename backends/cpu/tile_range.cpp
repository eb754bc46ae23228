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

int64_t dispatched_elementwise(DType dtype, TileOp op, const void* a, bool a_scalar, const void* b, bool b_scalar,
                               void* out, int64_t n) {
#if defined(FLUXION_ISA_DISPATCH) && !FLUXION_LIGHT_KERNELS
  // Below this the program's set-up and the tail's kernel call cost more than the wider vectors save.
  constexpr int64_t kMinElements = 1024;
  if (n < kMinElements || active_isa() == Isa::baseline || (dtype != f32 && dtype != f64)) return 0;
  // load a; op (b); store: bases 0, 1 and 2.
  TileInstr program[3];
  program[0].kind = TileInstr::load;
  program[0].source = a_scalar ? TileInstr::scalar : TileInstr::external;
  program[0].index = 0;
  program[1].op = op;
  if (tile_op_arity(op) == 1) {
    program[1].kind = TileInstr::unary;
  } else {
    program[1].kind = TileInstr::binary;
    program[1].source = b_scalar ? TileInstr::scalar : TileInstr::external;
    program[1].index = 1;
  }
  program[2].kind = TileInstr::store;
  program[2].index = 2;
  for (TileInstr& in : program) in.finish();
  char* bases[3] = {const_cast<char*>(static_cast<const char*>(a)), const_cast<char*>(static_cast<const char*>(b)),
                    static_cast<char*>(out)};
  const bool madd = op == TileOp::exp || op == TileOp::log || op == TileOp::tanh;
  double no_sums[1];
  return run_tile_range(dtype, madd, program, 3, bases, nullptr, no_sums, 0, 0, n);
#else
  (void)dtype, (void)op, (void)a, (void)a_scalar, (void)b, (void)b_scalar, (void)out, (void)n;
  return 0;
#endif
}

}  // namespace fluxion::cpu
