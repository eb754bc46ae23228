// Random programs as data: names, the readable form, op counts and dead-code elimination.
#include <sstream>

#include "fuzz/program.hpp"

namespace fluxion::fuzz {

const char* op_name(Op op) {
  static const char* const names[] = {"neg",
                                      "sin",
                                      "cos",
                                      "tanh",
                                      "sigmoid",
                                      "softplus",
                                      "exp",
                                      "square",
                                      "log_one_plus_square",
                                      "sqrt_one_plus_square",
                                      "rsqrt_one_plus_square",
                                      "expm1",
                                      "log1p_square",
                                      "pow_one_plus_square",
                                      "scale_shift",
                                      "reciprocal_one_plus_square",
                                      "squash",
                                      "convert",
                                      "softmax",
                                      "log_softmax",
                                      "cumsum",
                                      "add",
                                      "sub",
                                      "mul",
                                      "div_one_plus_square",
                                      "maximum",
                                      "minimum",
                                      "atan2",
                                      "pow_base",
                                      "where",
                                      "sum",
                                      "mean",
                                      "prod",
                                      "max",
                                      "min",
                                      "logsumexp",
                                      "norm",
                                      "reshape",
                                      "transpose",
                                      "broadcast_to",
                                      "expand_dims",
                                      "squeeze",
                                      "slice",
                                      "concatenate",
                                      "stack",
                                      "pad",
                                      "dynamic_slice",
                                      "dynamic_update_slice",
                                      "take",
                                      "ravel",
                                      "matmul",
                                      "outer",
                                      "dot_general",
                                      "solve",
                                      "gram",
                                      "cond",
                                      "switch_",
                                      "scan",
                                      "fori_loop",
                                      "while_loop",
                                      "grad_of",
                                      "jvp_of",
                                      "vmap_of",
                                      "jit_of",
                                      "checkpoint_of",
                                      "custom_jvp",
                                      "custom_vjp"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(Op::kCount), "one name per op");
  return names[static_cast<size_t>(op)];
}

namespace {

std::string name_of(int id) { return "v" + std::to_string(id); }

void print_ints(std::ostream& os, const char* label, const std::vector<int64_t>& v) {
  os << ' ' << label << "=(";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  os << ')';
}

// The params of a node that matter for its op, e.g. "axes=(0,1) keepdims=1".
void print_params(std::ostream& os, const Node& nd) {
  switch (nd.op) {
    case Op::PowOnePlusSquare:
    case Op::ReciprocalOnePlusSquare:
    case Op::Squash:
    case Op::Maximum:
    case Op::Minimum:
    case Op::Add:
    case Op::Sub:
    case Op::Mul: os << " c=" << nd.x; break;
    case Op::ScaleShift: os << " scale=" << nd.x << " shift=" << nd.y; break;
    case Op::Softmax:
    case Op::LogSoftmax:
    case Op::Concatenate:
    case Op::Stack: print_ints(os, "axis", nd.ints); break;
    case Op::Cumsum:
      print_ints(os, "axis", nd.ints);
      os << " reverse=" << nd.flag;
      break;
    case Op::Sum:
    case Op::Mean:
    case Op::Prod:
    case Op::Max:
    case Op::Min:
    case Op::LogSumExp:
    case Op::Norm:
      print_ints(os, "axes", nd.ints);
      os << " keepdims=" << nd.flag;
      break;
    case Op::Reshape:
    case Op::BroadcastTo: print_ints(os, "shape", nd.ints); break;
    case Op::Transpose: print_ints(os, "perm", nd.ints); break;
    case Op::ExpandDims:
    case Op::Squeeze: print_ints(os, "axes", nd.ints); break;
    case Op::Slice:
      print_ints(os, "starts", nd.ints), print_ints(os, "limits", nd.ints2), print_ints(os, "strides", nd.ints3);
      break;
    case Op::Pad:
      print_ints(os, "low", nd.ints), print_ints(os, "high", nd.ints2), print_ints(os, "interior", nd.ints3);
      os << " value=" << nd.x;
      break;
    case Op::DynamicSlice: print_ints(os, "starts", nd.ints), print_ints(os, "sizes", nd.ints2); break;
    case Op::DynamicUpdateSlice: print_ints(os, "starts", nd.ints); break;
    case Op::Take: print_ints(os, "axis", nd.ints); break;
    case Op::DotGeneral:
      print_ints(os, "contract_lhs", nd.ints), print_ints(os, "contract_rhs", nd.ints2);
      print_ints(os, "batch_lhs", nd.ints3), print_ints(os, "batch_rhs", nd.ints4);
      break;
    case Op::Where:
      if (nd.args.size() == 1) os << " else=" << nd.x;
      break;
    case Op::Cond:
    case Op::Switch:
      if (nd.flag) os << " index_from=sum(arg0) thresholds=" << nd.x << "," << nd.y;
      break;
    case Op::Scan: os << " reverse=" << nd.flag << " result=" << (nd.n == 0 ? "carry" : "ys"); break;
    case Op::ForiLoop:
      print_ints(os, "bounds", nd.ints);
      os << " tensor_bounds=" << nd.flag;
      break;
    case Op::WhileLoop: os << " trips=" << nd.n << " max_steps=" << nd.ints[0]; break;
    case Op::JitOf:
    case Op::CheckpointOf: os << " passed=" << nd.n << " (the rest closed over)"; break;
    default: break;
  }
}

const char* sub_label(const Node& nd, size_t i) {
  switch (nd.op) {
    case Op::Cond: return i == 0 ? "false branch" : "true branch";
    case Op::Switch: return "branch";
    case Op::Scan: return "body (carry, x, closed...) -> (carry, y)";
    case Op::ForiLoop:
    case Op::WhileLoop: return "body (i, carry, closed...) -> carry";
    default: return "function";
  }
}

void count_ops_into(const Program& p, std::vector<int64_t>& counts) {
  for (const Node& nd : p.nodes) {
    ++counts[static_cast<size_t>(nd.op)];
    for (const auto& s : nd.subs) count_ops_into(*s, counts);
  }
}

}  // namespace

void print(std::ostream& os, const Program& p, int indent) {
  std::string pad(static_cast<size_t>(indent), ' ');
  os << pad << "inputs";
  for (size_t i = 0; i < p.inputs.size(); ++i) os << ' ' << name_of(static_cast<int>(i)) << ':' << p.inputs[i];
  os << '\n';
  for (size_t k = 0; k < p.nodes.size(); ++k) {
    const Node& nd = p.nodes[k];
    os << pad << "  " << name_of(static_cast<int>(p.inputs.size() + k)) << ':' << nd.aval << " = " << op_name(nd.op);
    print_params(os, nd);
    for (int a : nd.args) os << ' ' << name_of(a);
    if (nd.constant.defined()) {
      std::ostringstream c;
      c << nd.constant;
      std::string text = c.str();
      for (char& ch : text)
        if (ch == '\n') ch = ' ';
      os << " const=" << text;
    }
    os << '\n';
    for (size_t s = 0; s < nd.subs.size(); ++s) {
      os << pad << "    " << sub_label(nd, s) << ":\n";
      print(os, *nd.subs[s], indent + 6);
    }
  }
  os << pad << "  outputs";
  for (int id : p.outputs) os << ' ' << name_of(id);
  os << '\n';
}

std::string to_string(const Program& p) {
  std::ostringstream os;
  print(os, p);
  return os.str();
}

void count_ops(const Program& p, std::vector<int64_t>& counts) {
  counts.resize(static_cast<size_t>(Op::kCount));
  count_ops_into(p, counts);
}

Program dead_code_eliminated(const Program& p) {
  int n_in = static_cast<int>(p.inputs.size());
  std::vector<bool> live(static_cast<size_t>(p.num_values()), false);
  for (int id : p.outputs) live[static_cast<size_t>(id)] = true;
  for (int k = static_cast<int>(p.nodes.size()) - 1; k >= 0; --k)
    if (live[static_cast<size_t>(n_in + k)])
      for (int a : p.nodes[static_cast<size_t>(k)].args) live[static_cast<size_t>(a)] = true;
  Program out = p;
  out.nodes.clear();
  std::vector<int> remap(static_cast<size_t>(p.num_values()), -1);
  for (int i = 0; i < n_in; ++i) remap[static_cast<size_t>(i)] = i;
  for (int k = 0; k < static_cast<int>(p.nodes.size()); ++k) {
    if (!live[static_cast<size_t>(n_in + k)]) continue;
    Node nd = p.nodes[static_cast<size_t>(k)];
    for (int& a : nd.args) a = remap[static_cast<size_t>(a)];
    remap[static_cast<size_t>(n_in + k)] = n_in + static_cast<int>(out.nodes.size());
    out.nodes.push_back(std::move(nd));
  }
  for (int& id : out.outputs) id = remap[static_cast<size_t>(id)];
  return out;
}

}  // namespace fluxion::fuzz
