/// Eigen interop: copy 1-d/2-d tensors to and from Eigen matrices and vectors.
#pragma once
#include <Eigen/Core>

#include "fluxion/tensor.hpp"

namespace fluxion {

/// A tensor holding a copy of `m`: 1-d for Eigen vector types (one compile-time column or row),
/// 2-d [rows, cols] otherwise, in the element type of m (double -> f64, float -> f32, ...).
template <class Derived> Tensor from_eigen(const Eigen::DenseBase<Derived>& m) {
  using T = typename Derived::Scalar;
  constexpr bool is_vector = Derived::ColsAtCompileTime == 1 || Derived::RowsAtCompileTime == 1;
  Shape shape = is_vector ? Shape{static_cast<int64_t>(m.size())}
                          : Shape{static_cast<int64_t>(m.rows()), static_cast<int64_t>(m.cols())};
  Tensor t = empty(AbstractValue{shape, dtype_of_v<T>});
  Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> out(t.mutable_data<T>(), m.rows(),
                                                                                    m.cols());
  out = m.derived();
  return t;
}

/// A copy of a 1-d (as an n x 1 column) or 2-d tensor as an Eigen matrix of T, converting the
/// element type like convert_element_type. ShapeError for other ranks.
template <class T> Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> to_eigen(const Tensor& t) {
  if (t.ndim() != 1 && t.ndim() != 2)
    detail::fail<ShapeError>("to_eigen", "needs a 1-d or 2-d tensor, got ", t.aval(),
                             ". Reshape it first (fx::reshape).");
  int64_t rows = t.shape()[0], cols = t.ndim() == 2 ? t.shape()[1] : 1;
  std::vector<T> values = t.to_vector<T>();
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> m(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) m(r, c) = values[static_cast<size_t>(r * cols + c)];
  return m;
}

}  // namespace fluxion
