/// Reference dot_general: for every output element, unravel its (batch, lhs free, rhs free) index
/// and sum the products over the contracting indices in row-major order. Floats accumulate in
/// long double (rounded once at the end); integers in the unsigned type, so overflow wraps.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "fluxion/primitive.hpp"

namespace fluxion::reference {
namespace dot_general_detail {

template <class T, bool = std::is_integral_v<T>> struct AccOf { using type = long double; };
template <class T> struct AccOf<T, true> { using type = std::make_unsigned_t<T>; };
template <class T> using Acc = typename AccOf<T>::type;

inline bool contains(const std::vector<int64_t>& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

/// Advances `idx` over extents `size` in row-major order; false after the last index.
inline bool next(std::vector<int64_t>& idx, const std::vector<int64_t>& size) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < size[d]) return true;
    idx[d] = 0;
  }
  return false;
}

}  // namespace dot_general_detail

template <class T> void dot_general(const T* lhs, const std::vector<int64_t>& ls, const T* rhs,
                                    const std::vector<int64_t>& rs, const AxisPair& contract, const AxisPair& batch,
                                    T* out) {
  using namespace dot_general_detail;
  using Accum = Acc<T>;
  std::vector<int64_t> lstride(ls.size(), 1), rstride(rs.size(), 1);
  for (size_t i = ls.size(); i-- > 1;) lstride[i - 1] = lstride[i] * ls[i];
  for (size_t i = rs.size(); i-- > 1;) rstride[i - 1] = rstride[i] * rs[i];

  // Each output dim, and each contracting dim, advances the lhs and rhs offsets by these steps.
  std::vector<int64_t> out_size, out_lstep, out_rstep, con_size, con_lstep, con_rstep;
  for (size_t i = 0; i < batch.first.size(); ++i) {
    const auto l = static_cast<size_t>(batch.first[i]), r = static_cast<size_t>(batch.second[i]);
    out_size.push_back(ls[l]), out_lstep.push_back(lstride[l]), out_rstep.push_back(rstride[r]);
  }
  for (size_t d = 0; d < ls.size(); ++d)
    if (!contains(batch.first, int64_t(d)) && !contains(contract.first, int64_t(d)))
      out_size.push_back(ls[d]), out_lstep.push_back(lstride[d]), out_rstep.push_back(0);
  for (size_t d = 0; d < rs.size(); ++d)
    if (!contains(batch.second, int64_t(d)) && !contains(contract.second, int64_t(d)))
      out_size.push_back(rs[d]), out_lstep.push_back(0), out_rstep.push_back(rstride[d]);
  for (size_t i = 0; i < contract.first.size(); ++i) {
    const auto l = static_cast<size_t>(contract.first[i]), r = static_cast<size_t>(contract.second[i]);
    con_size.push_back(ls[l]), con_lstep.push_back(lstride[l]), con_rstep.push_back(rstride[r]);
  }

  int64_t out_n = 1, con_n = 1;
  for (int64_t s : out_size) out_n *= s;
  for (int64_t s : con_size) con_n *= s;
  std::vector<int64_t> oi(out_size.size(), 0);
  for (int64_t o = 0; o < out_n; ++o, next(oi, out_size)) {
    int64_t lbase = 0, rbase = 0;
    for (size_t d = 0; d < oi.size(); ++d) lbase += oi[d] * out_lstep[d], rbase += oi[d] * out_rstep[d];
    Accum acc = 0;
    std::vector<int64_t> ci(con_size.size(), 0);
    for (int64_t c = 0; c < con_n; ++c, next(ci, con_size)) {
      int64_t lo = lbase, ro = rbase;
      for (size_t d = 0; d < ci.size(); ++d) lo += ci[d] * con_lstep[d], ro += ci[d] * con_rstep[d];
      acc = Accum(acc + Accum(static_cast<Accum>(lhs[lo]) * static_cast<Accum>(rhs[ro])));
    }
    out[o] = static_cast<T>(acc);
  }
}

}  // namespace fluxion::reference
