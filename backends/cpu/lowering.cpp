// The CPU lowering table: entries keyed by primitive, filed when primitives are built (any thread,
// once each) and read at plan time. Nodes of an unordered_map never move, so a returned entry
// stays valid while later primitives are filed.
#include "backends/cpu/lowering.hpp"

#include <mutex>
#include <unordered_map>

namespace fluxion::cpu {

namespace lowering_detail {
struct Table {
  std::mutex mutex;
  std::unordered_map<const Primitive*, Lowering> entries;
};
Table& table() {
  static Table t;
  return t;
}
}  // namespace lowering_detail

void set_lowering(const Primitive& p, const Lowering& lowering) {
  lowering_detail::Table& t = lowering_detail::table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.entries[&p] = lowering;
}

const Lowering* find_lowering(const Primitive& p) {
  lowering_detail::Table& t = lowering_detail::table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.entries.find(&p);
  return it == t.entries.end() ? nullptr : &it->second;
}

}  // namespace fluxion::cpu
