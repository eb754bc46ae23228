/// Switches shared by every header.
#pragma once

/// FLUXION_REPL_INLINE marks the out-of-class definitions of virtual functions. In C++
/// interpreters (clang-repl under xeus-cpp, cling under xeus-cling) every cell is its own module,
/// and a class whose key function is defined out of line has its vtable and type_info emitted
/// again, strongly, by later cells that use it ("Duplicate definition of symbol _ZTS..."). An
/// inline definition removes the key function, so they become mergeable (linkonce) everywhere.
#if defined(__CLANG_REPL__) || defined(__CLING__)
#define FLUXION_REPL_INLINE inline
#else
#define FLUXION_REPL_INLINE
#endif

/// FLUXION_LIGHT_KERNELS=1: the CPU backend runs the plain-loop kernels instead of Eigen's
/// expression templates. The default in C++ interpreters, whose JIT compiles at -O0: there,
/// instantiating the Eigen kernels makes the first cell take minutes and buys no speed.
/// Define FLUXION_LIGHT_KERNELS=0 before the include to keep the Eigen kernels in a notebook.
#ifndef FLUXION_LIGHT_KERNELS
#if defined(__CLANG_REPL__) || defined(__CLING__)
#define FLUXION_LIGHT_KERNELS 1
#else
#define FLUXION_LIGHT_KERNELS 0
#endif
#endif

namespace fluxion {
inline constexpr bool kLightKernels = FLUXION_LIGHT_KERNELS != 0;
}  // namespace fluxion
