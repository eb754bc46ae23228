/// The floating-point arithmetic of add, sub, mul and div as functors with a one-value and a packet
/// form: the primitives' scalar functors apply `one`, fused register programs `packet` (one IEEE
/// operation each, so both give the same bits).
#pragma once
#include <Eigen/Core>

namespace fluxion::cpu::binary_ops {
namespace ei = Eigen::internal;

struct Add {
  template <class S> static S one(S x, S y) { return x + y; }
  template <class P> static P packet(const P& x, const P& y) { return ei::padd(x, y); }
};
struct Sub {
  template <class S> static S one(S x, S y) { return x - y; }
  template <class P> static P packet(const P& x, const P& y) { return ei::psub(x, y); }
};
struct Mul {
  template <class S> static S one(S x, S y) { return x * y; }
  template <class P> static P packet(const P& x, const P& y) { return ei::pmul(x, y); }
};
struct Div {
  template <class S> static S one(S x, S y) { return x / y; }
  template <class P> static P packet(const P& x, const P& y) { return ei::pdiv(x, y); }
};

}  // namespace fluxion::cpu::binary_ops
