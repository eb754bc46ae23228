// The AVX2 variant of the register-program loop (backends/cpu/isa.hpp: why it is safe to link
// beside the baseline code). Compiled with -mavx2 and without FMA, so its values are the baseline's
// bits; only portable builds compile it (CMakeLists.txt).
#if !defined(__AVX2__) || defined(__FMA__)
#error "tile_range_avx2.cpp is compiled with -mavx2 and without -mfma (CMakeLists.txt)"
#endif
// Before any header: this translation unit's own copy of Eigen, under a name no other unit uses.
#define Eigen fluxion_eigen_avx2
#define FLUXION_ISA_VARIANT avx2  // packet helpers inlined (special_functions.hpp)
#define FLUXION_ISA_NAMESPACE isa_avx2
#include "backends/cpu/isa/tile_range_variant.inc"
