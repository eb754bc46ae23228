/// The scalar functor of every elementwise primitive, one source for three compilers: g++ (the
/// CPU's scalar forms and the cuda_emulated kernels), nvcc (the CUDA kernels) and NVRTC (jit's
/// generated kernels, which get this text from fluxion::scalar_functions::source()). One struct
/// per primitive, named after it in CamelCase (and -> LogicalAnd, or -> LogicalOr, not -> Not):
///   unary:   template <class T> FLUXION_HD static auto apply(T x);
///   binary:  template <class T> FLUXION_HD static auto apply(T a, T b);    // bool for comparisons
///   select:  template <class T> FLUXION_HD static T apply(bool pred, T on_true, T on_false);
///   convert: ConvertElementType<To>::apply(From x)  // a template on the result element type
/// The namespace is fluxion::scalar_functions, not fluxion::scalar: that is the public function
/// making a rank-0 tensor (fluxion/tensor.hpp), and a namespace cannot share its name.
/// Each accepts the element types its primitive's shape rule accepts (bool, int, long, long long,
/// float, double); callers instantiate it only for those.
///
/// Semantics are the reference kernels' (the primitives' Op::reference): integer + - * and negation
/// wrap (two's complement, computed in unsigned), x/0 = -1, x%0 = x, INT_MIN/-1 = INT_MIN,
/// INT_MIN%-1 = 0; max/min propagate NaN (the first NaN operand) and of equal operands (+0, -0)
/// keep the first; sign maps ±0 and NaN to themselves; round goes half away from zero,
/// round_nearest_even half to even; float -> int conversion maps NaN to 0 and saturates.
///
/// Floating-point functions are the C library's, through the fx_ overloads below (sinf for float,
/// sin for double): the host's libm under g++, CUDA's device functions under nvcc and NVRTC. The
/// CPU's floating forms of neg sin cos exp log log1p expm1 sqrt rsqrt tanh logistic sign floor
/// ceil round round_nearest_even are NOT these: they are lanes of Eigen packet functions
/// (backends/cpu/unary_packets.hpp, PacketForm in primitives/unary.cpp) so that a vector body and
/// its scalar tail give the same bits; both forms are within the reference's tolerance and agree
/// on special values (±0, ±inf, NaN). Every other CPU scalar form calls the functors here.
///
/// Rules of the text (it is also a string for NVRTC): no preprocessor lines and no macros inside
/// FLUXION_SHARED_SOURCE (the string keeps them unexpanded; FLUXION_HD is defined by the code jit
/// prepends, backends/cuda/device_code.hpp), no standard-library names, built-in types only.
#pragma once
#include "backends/cuda/device_code.hpp"

#if !defined(FLUXION_NVRTC)
#include <math.h>
#endif

/// Compiles its argument and defines fluxion::scalar_functions::source() returning it as text.
#define FLUXION_SHARED_SOURCE(...)                     \
  __VA_ARGS__                                          \
  namespace fluxion::scalar_functions {                \
  inline const char* source() { return #__VA_ARGS__; } \
  }

// clang-format off
FLUXION_SHARED_SOURCE(
namespace fluxion::scalar_functions {

// ---- element type traits (no <type_traits> under NVRTC) ----
template <class T> inline constexpr bool kIsFloating = false;
template <> inline constexpr bool kIsFloating<float> = true;
template <> inline constexpr bool kIsFloating<double> = true;
template <class T> inline constexpr bool kIsBool = false;
template <> inline constexpr bool kIsBool<bool> = true;
template <class T> inline constexpr bool kIsInteger = !kIsFloating<T> && !kIsBool<T>;

// The unsigned type of a signed integer type (int64_t is long under g++, long long under NVRTC).
template <class T> struct UnsignedOf;
template <> struct UnsignedOf<int> { using type = unsigned int; };
template <> struct UnsignedOf<long> { using type = unsigned long; };
template <> struct UnsignedOf<long long> { using type = unsigned long long; };
template <class T> using Unsigned = typename UnsignedOf<T>::type;

// Largest and smallest values of a signed integer type.
template <class T> FLUXION_HD constexpr T int_max() { return T(Unsigned<T>(~Unsigned<T>(0)) >> 1); }
template <class T> FLUXION_HD constexpr T int_min() { return T(-int_max<T>() - T(1)); }

// Two's complement wrap-around arithmetic, computed in unsigned (where overflow is defined).
template <class T> FLUXION_HD inline T wrap_add(T x, T y) { return T(Unsigned<T>(x) + Unsigned<T>(y)); }
template <class T> FLUXION_HD inline T wrap_sub(T x, T y) { return T(Unsigned<T>(x) - Unsigned<T>(y)); }
template <class T> FLUXION_HD inline T wrap_mul(T x, T y) { return T(Unsigned<T>(x) * Unsigned<T>(y)); }
template <class T> FLUXION_HD inline T wrap_neg(T x) { return T(Unsigned<T>(0) - Unsigned<T>(x)); }

template <class T> FLUXION_HD inline bool is_nan(T x) {
  if constexpr (kIsFloating<T>) return x != x;
  else return false;
}

// ---- the C library's functions, float and double ----
FLUXION_HD inline float fx_sin(float x) { return ::sinf(x); }
FLUXION_HD inline double fx_sin(double x) { return ::sin(x); }
FLUXION_HD inline float fx_cos(float x) { return ::cosf(x); }
FLUXION_HD inline double fx_cos(double x) { return ::cos(x); }
FLUXION_HD inline float fx_tan(float x) { return ::tanf(x); }
FLUXION_HD inline double fx_tan(double x) { return ::tan(x); }
FLUXION_HD inline float fx_exp(float x) { return ::expf(x); }
FLUXION_HD inline double fx_exp(double x) { return ::exp(x); }
FLUXION_HD inline float fx_log(float x) { return ::logf(x); }
FLUXION_HD inline double fx_log(double x) { return ::log(x); }
FLUXION_HD inline float fx_log1p(float x) { return ::log1pf(x); }
FLUXION_HD inline double fx_log1p(double x) { return ::log1p(x); }
FLUXION_HD inline float fx_expm1(float x) { return ::expm1f(x); }
FLUXION_HD inline double fx_expm1(double x) { return ::expm1(x); }
FLUXION_HD inline float fx_sqrt(float x) { return ::sqrtf(x); }
FLUXION_HD inline double fx_sqrt(double x) { return ::sqrt(x); }
FLUXION_HD inline float fx_tanh(float x) { return ::tanhf(x); }
FLUXION_HD inline double fx_tanh(double x) { return ::tanh(x); }
FLUXION_HD inline float fx_fabs(float x) { return ::fabsf(x); }
FLUXION_HD inline double fx_fabs(double x) { return ::fabs(x); }
FLUXION_HD inline float fx_floor(float x) { return ::floorf(x); }
FLUXION_HD inline double fx_floor(double x) { return ::floor(x); }
FLUXION_HD inline float fx_ceil(float x) { return ::ceilf(x); }
FLUXION_HD inline double fx_ceil(double x) { return ::ceil(x); }
FLUXION_HD inline float fx_round(float x) { return ::roundf(x); }  // half away from zero
FLUXION_HD inline double fx_round(double x) { return ::round(x); }
FLUXION_HD inline float fx_rint(float x) { return ::rintf(x); }  // half to even (default rounding mode)
FLUXION_HD inline double fx_rint(double x) { return ::rint(x); }
FLUXION_HD inline float fx_pow(float x, float y) { return ::powf(x, y); }
FLUXION_HD inline double fx_pow(double x, double y) { return ::pow(x, y); }
FLUXION_HD inline float fx_atan2(float y, float x) { return ::atan2f(y, x); }
FLUXION_HD inline double fx_atan2(double y, double x) { return ::atan2(y, x); }
FLUXION_HD inline float fx_fmod(float x, float y) { return ::fmodf(x, y); }
FLUXION_HD inline double fx_fmod(double x, double y) { return ::fmod(x, y); }

// ---- unary ----
struct Neg {  // floats: the sign bit flipped (-(+0) = -0); integers wrap (-INT_MIN = INT_MIN)
  template <class T> FLUXION_HD static T apply(T x) {
    if constexpr (kIsInteger<T>) return wrap_neg(x);
    else return -x;
  }
};
struct Sin { template <class T> FLUXION_HD static T apply(T x) { return fx_sin(x); } };
struct Cos { template <class T> FLUXION_HD static T apply(T x) { return fx_cos(x); } };
struct Tan { template <class T> FLUXION_HD static T apply(T x) { return fx_tan(x); } };
struct Exp { template <class T> FLUXION_HD static T apply(T x) { return fx_exp(x); } };
struct Log { template <class T> FLUXION_HD static T apply(T x) { return fx_log(x); } };
struct Log1p { template <class T> FLUXION_HD static T apply(T x) { return fx_log1p(x); } };
struct Expm1 { template <class T> FLUXION_HD static T apply(T x) { return fx_expm1(x); } };
struct Sqrt { template <class T> FLUXION_HD static T apply(T x) { return fx_sqrt(x); } };
struct Rsqrt {  // both steps correctly rounded (not the hardware's approximate rsqrt)
  template <class T> FLUXION_HD static T apply(T x) { return T(1) / fx_sqrt(x); }
};
struct Tanh { template <class T> FLUXION_HD static T apply(T x) { return fx_tanh(x); } };
struct Logistic {  // 0 at -inf (exp gives inf), 1 at +inf, NaN kept
  template <class T> FLUXION_HD static T apply(T x) { return T(1) / (T(1) + fx_exp(-x)); }
};
struct Abs {  // floats: the sign bit cleared; integers wrap (|INT_MIN| = INT_MIN)
  template <class T> FLUXION_HD static T apply(T x) {
    if constexpr (kIsInteger<T>) return x < T(0) ? wrap_neg(x) : x;
    else return fx_fabs(x);
  }
};
struct Sign {  // 1, -1, or x itself: ±0 keep their sign and NaN stays NaN (XLA's sign)
  template <class T> FLUXION_HD static T apply(T x) {
    if constexpr (kIsInteger<T>) return T((x > T(0)) - (x < T(0)));
    else return x > T(0) ? T(1) : x < T(0) ? T(-1) : x;
  }
};
struct Floor { template <class T> FLUXION_HD static T apply(T x) { return fx_floor(x); } };
struct Ceil { template <class T> FLUXION_HD static T apply(T x) { return fx_ceil(x); } };
struct Round { template <class T> FLUXION_HD static T apply(T x) { return fx_round(x); } };
struct RoundNearestEven { template <class T> FLUXION_HD static T apply(T x) { return fx_rint(x); } };
struct Not {  // logical on bool, bitwise on integers
  template <class T> FLUXION_HD static T apply(T x) {
    if constexpr (kIsBool<T>) return !x;
    else return T(~x);
  }
};
struct StopGradient { template <class T> FLUXION_HD static T apply(T x) { return x; } };

// ---- binary ----
struct Add {
  template <class T> FLUXION_HD static T apply(T a, T b) {
    if constexpr (kIsInteger<T>) return wrap_add(a, b);
    else return a + b;
  }
};
struct Sub {
  template <class T> FLUXION_HD static T apply(T a, T b) {
    if constexpr (kIsInteger<T>) return wrap_sub(a, b);
    else return a - b;
  }
};
struct Mul {
  template <class T> FLUXION_HD static T apply(T a, T b) {
    if constexpr (kIsInteger<T>) return wrap_mul(a, b);
    else return a * b;
  }
};
struct Div {  // integers truncate; a/0 = -1, INT_MIN/-1 = INT_MIN
  template <class T> FLUXION_HD static T apply(T a, T b) {
    if constexpr (kIsInteger<T>) {
      if (b == T(0)) return T(-1);
      if (b == T(-1)) return wrap_neg(a);
      return T(a / b);
    } else {
      return a / b;
    }
  }
};
struct Rem {  // the dividend's sign (C fmod); integers: a%0 = a, INT_MIN%-1 = 0
  template <class T> FLUXION_HD static T apply(T a, T b) {
    if constexpr (kIsInteger<T>) {
      if (b == T(0)) return a;
      if (b == T(-1)) return T(0);
      return T(a % b);
    } else {
      return fx_fmod(a, b);
    }
  }
};
struct Pow { template <class T> FLUXION_HD static T apply(T a, T b) { return fx_pow(a, b); } };
struct Atan2 { template <class T> FLUXION_HD static T apply(T a, T b) { return fx_atan2(a, b); } };
struct Max {  // the first NaN operand if any, else the larger; of equal operands (+0, -0) the first
  template <class T> FLUXION_HD static T apply(T a, T b) { return is_nan(a) ? a : is_nan(b) ? b : a < b ? b : a; }
};
struct Min {  // the first NaN operand if any, else the smaller; of equal operands (+0, -0) the first
  template <class T> FLUXION_HD static T apply(T a, T b) { return is_nan(a) ? a : is_nan(b) ? b : b < a ? b : a; }
};
// Comparisons give bool; NaN compares unordered (only Ne is true).
struct Lt { template <class T> FLUXION_HD static bool apply(T a, T b) { return a < b; } };
struct Le { template <class T> FLUXION_HD static bool apply(T a, T b) { return a <= b; } };
struct Gt { template <class T> FLUXION_HD static bool apply(T a, T b) { return a > b; } };
struct Ge { template <class T> FLUXION_HD static bool apply(T a, T b) { return a >= b; } };
struct Eq { template <class T> FLUXION_HD static bool apply(T a, T b) { return a == b; } };
struct Ne { template <class T> FLUXION_HD static bool apply(T a, T b) { return a != b; } };
struct LogicalAnd {  // logical on bool, bitwise on integers
  template <class T> FLUXION_HD static T apply(T a, T b) {
    if constexpr (kIsBool<T>) return a && b;
    else return T(a & b);
  }
};
struct LogicalOr {  // logical on bool, bitwise on integers
  template <class T> FLUXION_HD static T apply(T a, T b) {
    if constexpr (kIsBool<T>) return a || b;
    else return T(a | b);
  }
};

// ---- conversion ----
struct Select {  // operands in the primitive's order: pred, on_true, on_false
  template <class T> FLUXION_HD static T apply(bool pred, T on_true, T on_false) { return pred ? on_true : on_false; }
};
// From -> To: to bool is x != 0 (NaN -> true); float -> integer maps NaN to 0 and saturates
// (casting an out-of-range float is undefined); everything else is the C++ conversion (floats
// round to nearest).
template <class To> struct ConvertElementType {
  template <class From> FLUXION_HD static To apply(From x) {
    if constexpr (kIsBool<To>) {
      return x != From(0);
    } else if constexpr (kIsInteger<To> && kIsFloating<From>) {
      if (x != x) return To(0);
      if (x <= From(int_min<To>())) return int_min<To>();
      if (x >= From(int_max<To>())) return int_max<To>();  // From(max) may round up to 2^(bits-1)
      return To(x);
    } else {
      return To(x);
    }
  }
};

// ---- the random family's functions (primitives/random.hpp) ----
/// a·b + c rounded once (the hardware's fused multiply-add on both sides).
FLUXION_HD inline float fused_multiply_add(float a, float b, float c) { return ::fmaf(a, b, c); }
FLUXION_HD inline double fused_multiply_add(double a, double b, double c) { return ::fma(a, b, c); }

/// Horner's rule p = c[0] w^(n-1) + ... + c[n-1] with fused multiply-adds, as XLA's CPU code runs it.
template <class T, int N> FLUXION_HD T erf_inv_horner(const T (&c)[N], T w) {
  T p = c[0];
  for (int i = 1; i < N; ++i) p = fused_multiply_add(p, w, c[i]);
  return p;
}

/// XLA's log1p (its CPU intrinsic): for |x| < √2 - 1, Cephes' rational approximation x - x²/2 +
/// x³ P(x)/Q(x) evaluated with fused multiply-adds; elsewhere log(1 + x).
template <class T> FLUXION_HD T xla_log1p(T x) {
  const T num[7] = {T(4.5270000862445199635215E-5), T(4.9854102823193375972212E-1), T(6.5787325942061044846969E0),
                    T(2.9911919328553073277375E1),  T(6.0949667980987787057556E1),  T(5.7112963590585538103336E1),
                    T(2.0039553499201281259648E1)};
  const T den[7] = {T(1.0),
                    T(1.5062909083469192043167E1),
                    T(8.3047565967967209469434E1),
                    T(2.2176239823732856465394E2),
                    T(3.0909872225312059774938E2),
                    T(2.1642788614495947685003E2),
                    T(6.0118660497603843919306E1)};
  if (!(fx_fabs(x) < T(0.41421356237309504880))) return fx_log(x + T(1));
  T p = T(0), q = T(0);
  for (int i = 0; i < 7; ++i) {
    p = fused_multiply_add(p, x, num[i]);
    q = fused_multiply_add(q, x, den[i]);
  }
  const T x2 = x * x;
  return x + fused_multiply_add(T(-0.5), x2, (x * x2) * (p / q));
}

/// XLA's erf_inv (the decomposition jax.lax.erf_inv lowers to): Giles' single-precision polynomials
/// in w = -log1p(-x²) for f32, his three double-precision ones for f64; ±1 gives ±inf and |x| > 1
/// NaN. Bit for bit XLA's except where XLA's log and the C library's differ (tests/test_random.cpp
/// counts the samples of normal that match jax.random.normal's).
FLUXION_HD inline float erf_inv_scalar(float x) {
  const float w = -xla_log1p(-x * x);
  float p;
  if (w < 5.0f) {
    const float c[9] = {2.81022636e-08f, 3.43273939e-07f, -3.5233877e-06f, -4.39150654e-06f, 0.00021858087f,
                        -0.00125372503f, -0.00417768164f, 0.246640727f,    1.50140941f};
    p = erf_inv_horner(c, w - 2.5f);
  } else {
    const float c[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f, -0.00367342844f, 0.00573950773f,
                        -0.0076224613f,   0.00943887047f,  1.00167406f,    2.83297682f};
    p = erf_inv_horner(c, fx_sqrt(w) - 3.0f);
  }
  return fx_fabs(x) == 1.0f ? x * fx_exp(1000.0f) : p * x;  // ±inf: exp overflows (no macros here)
}
FLUXION_HD inline double erf_inv_scalar(double x) {
  const double w = -xla_log1p(-x * x);
  double p;
  if (w < 6.25) {
    const double c[23] = {
        -3.6444120640178196996e-21, -1.685059138182016589e-19,  1.2858480715256400167e-18,  1.115787767802518096e-17,
        -1.333171662854620906e-16,  2.0972767875968561637e-17,  6.6376381343583238325e-15,  -4.0545662729752068639e-14,
        -8.1519341976054721522e-14, 2.6335093153082322977e-12,  -1.2975133253453532498e-11, -5.4154120542946279317e-11,
        1.051212273321532285e-09,   -4.1126339803469836976e-09, -2.9070369957882005086e-08, 4.2347877827932403518e-07,
        -1.3654692000834678645e-06, -1.3882523362786468719e-05, 0.0001867342080340571352,   -0.00074070253416626697512,
        -0.0060336708714301490533,  0.24015818242558961693,     1.6536545626831027356};
    p = erf_inv_horner(c, w - 3.125);
  } else if (w < 16.0) {
    const double c[19] = {
        2.2137376921775787049e-09,  9.0756561938885390979e-08, -2.7517406297064545428e-07, 1.8239629214389227755e-08,
        1.5027403968909827627e-06,  -4.013867526981545969e-06, 2.9234449089955446044e-06,  1.2475304481671778723e-05,
        -4.7318229009055733981e-05, 6.8284851459573175448e-05, 2.4031110387097893999e-05,  -0.0003550375203628474796,
        0.00095328937973738049703,  -0.0016882755560235047313, 0.0024914420961078508066,   -0.0037512085075692412107,
        0.005370914553590063617,    1.0052589676941592334,     3.0838856104922207635};
    p = erf_inv_horner(c, fx_sqrt(w) - 3.25);
  } else {
    const double c[17] = {-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
                          -3.7894654401267369937e-09, 7.6157012080783393804e-09,  -1.4960026627149240478e-08,
                          2.9147953450901080826e-08,  -6.7711997758452339498e-08, 2.2900482228026654717e-07,
                          -9.9298272942317002539e-07, 4.5260625972231537039e-06,  -1.9681778105531670567e-05,
                          7.5995277030017761139e-05,  -0.00021503011930044477347, -0.00013871931833623122026,
                          1.0103004648645343977,      4.8499064014085844221};
    p = erf_inv_horner(c, fx_sqrt(w) - 5.0);
  }
  return fx_fabs(x) == 1.0 ? x * fx_exp(1000.0) : p * x;  // ±inf: exp overflows
}

struct ErfInv {  // XLA's erf_inv (above): ±1 -> ±inf, |x| > 1 -> NaN
  template <class T> FLUXION_HD static T apply(T x) { return erf_inv_scalar(x); }
};

}  // namespace fluxion::scalar_functions
)
// clang-format on

#if !defined(FLUXION_NVRTC)
#include "fluxion/half.hpp"
namespace fluxion::scalar_functions {
// The 16-bit storage types count as floating for ConvertElementType: a conversion to one is its one rounding
// constructor. Values are never read from them here: callers pass to_compute(x), the exact float.
template <> inline constexpr bool kIsFloating<float16_t> = true;
template <> inline constexpr bool kIsFloating<bfloat16_t> = true;
}  // namespace fluxion::scalar_functions
#endif
