/// The params of the primitives that hold sub-Jaxprs by name (cond, while, scan, checkpoint),
/// shared by their rules (primitives/cond.cpp, while_loop.cpp, scan.cpp, checkpoint.cpp) and by
/// the backends' kernels that run the sub-Jaxprs themselves (backends/cuda/kernels/control_flow.hpp).
#pragma once
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "fluxion/control_flow.hpp"

namespace fluxion {
namespace cond_detail {
using namespace control_flow_detail;

struct CondParams final : Params {
  std::vector<SubJaxpr> branches;
  explicit CondParams(std::vector<SubJaxpr> b) : branches(std::move(b)) {}
  void print(std::ostream& os) const override {
    for (size_t i = 0; i < branches.size(); ++i) {
      if (i) os << " ";
      branches[i].print(os, ("branch" + std::to_string(i)).c_str());
    }
  }
  bool equals(const Params& o) const override {
    const auto* c = dynamic_cast<const CondParams*>(&o);
    if (!c || c->branches.size() != branches.size()) return false;
    for (size_t i = 0; i < branches.size(); ++i)
      if (c->branches[i].id() != branches[i].id()) return false;
    return true;
  }
  size_t hash() const override {
    size_t h = 0x436f6e64;
    for (const SubJaxpr& b : branches) h = detail::hash_combine(h, std::hash<const void*>()(b.id()));
    return h;
  }
  std::shared_ptr<const Params> clone() const override { return std::make_shared<CondParams>(*this); }
  void save(ParamsWriter& w) const override;  // src/export_params_special.cpp
  static std::shared_ptr<const Params> load(ParamsReader& r);
};
}  // namespace cond_detail

namespace while_detail {
using namespace control_flow_detail;

struct WhileParams final : Params {
  SubJaxpr cond, body;
  int64_t num_cond_consts, num_body_consts, max_steps;
  WhileParams(Jaxpr c, Jaxpr b, int64_t ncc, int64_t nbc, int64_t steps)
      : cond(std::move(c)), body(std::move(b)), num_cond_consts(ncc), num_body_consts(nbc), max_steps(steps) {}
  void print(std::ostream& os) const override {
    os << "max_steps=" << max_steps << " ";
    cond.print(os, "cond");
    os << " ";
    body.print(os, "body");
  }
  bool equals(const Params& o) const override {
    const auto* w = dynamic_cast<const WhileParams*>(&o);
    return w && w->cond.id() == cond.id() && w->body.id() == body.id() && w->max_steps == max_steps &&
           w->num_cond_consts == num_cond_consts && w->num_body_consts == num_body_consts;
  }
  size_t hash() const override {
    size_t h = detail::hash_combine(std::hash<const void*>()(cond.id()), std::hash<const void*>()(body.id()));
    return detail::hash_combine(h, static_cast<size_t>(max_steps));
  }
  std::shared_ptr<const Params> clone() const override { return std::make_shared<WhileParams>(*this); }
  void save(ParamsWriter& w) const override;  // src/export_params_special.cpp
  static std::shared_ptr<const Params> load(ParamsReader& r);
  size_t ncc() const { return static_cast<size_t>(num_cond_consts); }
  size_t nbc() const { return static_cast<size_t>(num_body_consts); }
};
}  // namespace while_detail

namespace scan_detail {
using namespace control_flow_detail;

struct ScanParams final : Params {
  SubJaxpr body;
  int64_t num_consts, num_carry, length;
  bool reverse;
  ScanParams(Jaxpr b, size_t nc, size_t ncar, int64_t len, bool rev)
      : body(std::move(b)),
        num_consts(static_cast<int64_t>(nc)),
        num_carry(static_cast<int64_t>(ncar)),
        length(len),
        reverse(rev) {}
  void print(std::ostream& os) const override {
    os << "length=" << length << " reverse=" << (reverse ? "True" : "False") << " num_consts=" << num_consts
       << " num_carry=" << num_carry << " ";
    body.print(os, "jaxpr");
  }
  bool equals(const Params& o) const override {
    const auto* s = dynamic_cast<const ScanParams*>(&o);
    return s && s->body.id() == body.id() && s->num_consts == num_consts && s->num_carry == num_carry &&
           s->length == length && s->reverse == reverse;
  }
  size_t hash() const override {
    return detail::hash_combine(std::hash<const void*>()(body.id()), static_cast<size_t>(length * 2 + reverse));
  }
  std::shared_ptr<const Params> clone() const override { return std::make_shared<ScanParams>(*this); }
  void save(ParamsWriter& w) const override;  // src/export_params_special.cpp
  static std::shared_ptr<const Params> load(ParamsReader& r);
  size_t nc() const { return static_cast<size_t>(num_consts); }
  size_t ncar() const { return static_cast<size_t>(num_carry); }
  size_t nx() const { return body.jaxpr().invars.size() - nc() - ncar(); }
  size_t ny() const { return body.jaxpr().outputs.size() - ncar(); }
};
}  // namespace scan_detail

namespace checkpoint_detail {
using namespace control_flow_detail;

struct Caches;

/// The sub-Jaxpr (with its compiled plans) and the Jaxprs derived from it; copies share both.
struct CheckpointParams final : Params {
  explicit CheckpointParams(Jaxpr j);
  SubJaxpr body;
  std::shared_ptr<Caches> caches;

  void print(std::ostream& os) const override { body.print(os, "jaxpr"); }
  bool equals(const Params& o) const override {
    const auto* c = dynamic_cast<const CheckpointParams*>(&o);
    return c && c->body.id() == body.id();
  }
  size_t hash() const override { return std::hash<const void*>()(body.id()); }
  std::shared_ptr<const Params> clone() const override { return std::make_shared<CheckpointParams>(*this); }
  void save(ParamsWriter& w) const override;  // src/export_params_special.cpp
  static std::shared_ptr<const Params> load(ParamsReader& r);
};
}  // namespace checkpoint_detail
}  // namespace fluxion
