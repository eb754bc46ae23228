/// Shapes and abstract values (shape + dtype), with overflow-checked element counts.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

#include "fluxion/dtype.hpp"

namespace fluxion {

/// A tensor shape: a list of non-negative extents, row-major.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}  // NOLINT: implicit on purpose
  template <class It> Shape(It first, It last) : dims_(first, last) {}

  int64_t size() const { return static_cast<int64_t>(dims_.size()); }
  bool empty() const { return dims_.empty(); }
  int64_t operator[](int64_t i) const { return dims_[static_cast<size_t>(i)]; }
  int64_t& operator[](int64_t i) { return dims_[static_cast<size_t>(i)]; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }
  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>& dims() { return dims_; }
  void push_back(int64_t d) { dims_.push_back(d); }

  /// Product of the extents (1 for rank 0). Assumes the shape was validated.
  int64_t num_elements() const;
  /// Row-major strides in elements.
  std::vector<int64_t> strides() const;

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }
  friend bool operator==(const Shape& a, const std::vector<int64_t>& b) { return a.dims_ == b; }
  friend bool operator==(const std::vector<int64_t>& a, const Shape& b) { return a == b.dims_; }
  friend bool operator!=(const Shape& a, const std::vector<int64_t>& b) { return a.dims_ != b; }

 private:
  std::vector<int64_t> dims_;
};

/// Prints "[2,3]".
std::ostream& operator<<(std::ostream& os, const Shape& s);

/// Element count of `dims`, or ShapeError naming `where` for negative extents or int64 overflow.
int64_t checked_num_elements(const char* where, const std::vector<int64_t>& dims);

/// Normalises a possibly negative axis against `rank`; AxisError naming `where` when out of range.
int64_t normalize_axis(const char* where, int64_t axis, int64_t rank);

/// Normalised (non-negative), sorted axes; AxisError naming `where` for an axis out of range or
/// named twice.
std::vector<int64_t> normalize_axes(const char* where, const std::vector<int64_t>& axes, int64_t rank);

/// Shape and dtype of a value: what every shape rule computes ("aval" as in JAX).
struct AbstractValue {
  Shape shape;
  DType dtype = f64;
  int64_t ndim() const { return shape.size(); }
  friend bool operator==(const AbstractValue& a, const AbstractValue& b) {
    return a.dtype == b.dtype && a.shape == b.shape;
  }
  friend bool operator!=(const AbstractValue& a, const AbstractValue& b) { return !(a == b); }
};

/// Prints "f32[4,8]" (the Jaxpr format).
std::ostream& operator<<(std::ostream& os, const AbstractValue& a);

}  // namespace fluxion
