// A tiny user translation unit for the compile-time measurement in bench/RESULTS.md (see
// bench/measure_compile_time.sh). Compiled as is it is what every test file or notebook cell pays
// for <fluxion/fluxion.hpp>; compiled with -DFLUXION_IMPLEMENTATION it is the header-only mode,
// which also compiles the whole implementation into this translation unit.
#include <fluxion/fluxion.hpp>

#include <iostream>

namespace fx = fluxion;

int main() {
  fx::Tensor x = fx::full({3}, 0.5, fx::f32), y = fx::full({3}, 2.0, fx::f32);
  fx::Tensor z = fx::sum(x * y + fx::sin(x));
  fx::Tensor m = fx::matmul(fx::full({2, 3}, 1.0, fx::f32), fx::full({3, 2}, 1.0, fx::f32));
  std::cout << z << "\n" << m << "\n";
  return 0;
}
