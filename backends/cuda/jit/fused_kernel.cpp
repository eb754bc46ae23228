// generate_fused_kernel: the members of a fused step as statements of one grid-stride loop (over
// elements, or over the outputs of its sums), named by a hash of the whole source; FusedArgs: the
// per-call argument array of such a kernel.
#include "backends/cuda/jit/fused_kernel.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "backends/cuda/jit/shared_functors.hpp"
#include "backends/cuda/scalar_functor_names.hpp"
#include "fluxion/cuda.hpp"

namespace fluxion::cuda::jit {

namespace fused_kernel_detail {

// device_code.hpp's text (FLUXION_HD, FLUXION_NVRTC, fx_index), embedded by CMake.
const char* const kDeviceCode =
#include "fluxion_jit_device_code.inc"
    ;  // NOLINT: the string literal above

// Element types as the generated code spells them (no <cstdint> under NVRTC).
const char* type_name(DType d) { return scalar_type_name(d); }

// FNV-1a, 64 bits: the kernel's name, and with the architecture the compile caches' key.
uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

uint64_t literal_bits(const Tensor& literal) {
  const ArrayImpl& a = literal.array("jit");
  uint64_t bits = 0;
  const size_t size = static_cast<size_t>(dtype_size(literal.dtype()));
  if (a.device().is_cpu()) std::memcpy(&bits, a.data(), size);
  else memory::copy(&bits, Device::cpu(), a.data(), a.device(), static_cast<int64_t>(size));
  return bits;
}

constexpr const char* kNamePlaceholder = "FLUXION_FUSED_KERNEL_NAME";

// An integer constant of the generated code (fx_index arithmetic).
std::string constant(int64_t v) { return std::to_string(v) + "LL"; }

// The operand element broadcast member `m` reads for output element `i`: the coordinate of `i` in
// each coalesced output dim times the operand's stride there (dims it broadcasts along add 0).
std::string broadcast_index(const runtime::FusedMember& m) {
  std::string index;
  int64_t after = 1;  // elements of the dims after d
  for (size_t d = m.bdims.size(); d-- > 0;) {
    if (m.bsrc[d] != 0) {
      std::string coordinate = after == 1 ? std::string("i") : "i / " + constant(after);
      if (d > 0) coordinate = (after == 1 ? coordinate : "(" + coordinate + ")") + " % " + constant(m.bdims[d]);
      if (m.bsrc[d] != 1) coordinate = "(" + coordinate + ") * " + constant(m.bsrc[d]);
      index = index.empty() ? coordinate : coordinate + " + " + index;
    }
    after *= m.bdims[d];
  }
  return index.empty() ? "0" : index;
}

// The sums of a fused step that share one layout (runtime::FusedReduction): one loop over their
// outputs. Short runs or many outputs: a thread per output, adding its elements in order. Long
// runs and few outputs (a loss's full sum): a block per output, its threads striding over the run
// and their partial sums added in shared memory (a thread per output would leave the GPU idle).
struct SumPhase {
  int64_t outputs = 0, row = 0, inner = 1;
  std::vector<std::string> inputs, outputs_params, types;  // by sum: value summed, output parameter, its type
  std::vector<int> members;                                // by sum: its member index (accumulator a<m>)
  bool by_block = false;                                   // chosen by generate_fused_kernel
  bool suits_blocks() const { return row >= kBlockSumRun && outputs < kBlockSumOutputs; }
  int64_t shared_bytes() const { return static_cast<int64_t>(members.size()) * kFusedBlockThreads * 8; }
};

// Static shared memory the block sums of one kernel may use (the static limit is 48 KiB); phases
// beyond it add up by a thread per output.
constexpr int64_t kSharedBudget = 32 * 1024;

// Adds sum member `m` (member `index`), reading the value named `input` and writing parameter
// `output` of type `type`, to the phase of its layout. Floating sums accumulate in double from -0
// (the CPU jit's row sums: backends/cpu/row_sums.hpp) and round once to the output type.
void add_sum(std::vector<SumPhase>& phases, const runtime::FusedMember& m, const std::string& input,
             const std::string& output, const std::string& type, int index) {
  if (input.empty())
    detail::fail<NotImplementedError>("jit", "a fused reduce_sum reads a value not computed in its group.");
  auto it = std::find_if(phases.begin(), phases.end(),
                         [&](const SumPhase& p) { return p.row == m.layout.row && p.inner == m.layout.inner; });
  if (it == phases.end()) {
    SumPhase p;
    p.outputs = m.layout.outputs;
    p.row = m.layout.row;
    p.inner = m.layout.inner;
    it = phases.insert(phases.end(), p);
  }
  it->inputs.push_back(input);
  it->outputs_params.push_back(output);
  it->types.push_back(type);
  it->members.push_back(index);
}

// `lines` with two more spaces of indentation each.
std::string indented(const std::string& lines) {
  std::string out;
  size_t start = 0;
  while (start < lines.size()) {
    const size_t end = lines.find('\n', start);
    out += "  " + lines.substr(start, end == std::string::npos ? std::string::npos : end + 1 - start);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// The loop of `phase`: over its outputs, each output's elements running `body` (the members, per
// element i) and added up. Output o = (outer, in) reads elements outer * row * inner + r * inner +
// in, r = 0 .. row - 1. By block, every thread of a block takes the same outputs, so the barriers
// are reached by all of them.
std::string sum_phase(const SumPhase& phase, const std::string& body, size_t number) {
  std::ostringstream os;
  const std::string inner = constant(phase.inner), block = std::to_string(kFusedBlockThreads);
  const std::string shared = "fx_partial" + std::to_string(number);
  const bool by_block = phase.by_block;
  os << "  // Sums of runs of " << phase.row << " elements " << phase.inner << " apart: a "
     << (by_block ? "block" : "thread") << " per output.\n";
  if (by_block) {
    os << "  __shared__ double " << shared << "[" << phase.members.size() * kFusedBlockThreads << "];\n"
       << "  for (fx_index o = blockIdx.x; o < " << constant(phase.outputs) << "; o += gridDim.x) {\n";
  } else {
    os << "  for (fx_index o = first; o < " << constant(phase.outputs) << "; o += stride) {\n";
  }
  for (int m : phase.members) os << "    double a" << m << " = -0.0;\n";
  os << "    const fx_index base = "
     << (phase.inner == 1 ? "o * " + constant(phase.row)
                          : "o / " + inner + " * " + constant(phase.row * phase.inner) + " + o % " + inner)
     << ";\n"
     << (by_block ? "    for (fx_index r = threadIdx.x; r < " + constant(phase.row) + "; r += " + block + ") {\n"
                  : "    for (fx_index r = 0; r < " + constant(phase.row) + "; ++r) {\n")
     << "      const fx_index i = base + r" << (phase.inner == 1 ? std::string() : " * " + inner) << ";\n"
     << indented(body);
  for (size_t s = 0; s < phase.members.size(); ++s)
    os << "      a" << phase.members[s] << " += static_cast<double>(" << phase.inputs[s] << ");  // reduce_sum\n";
  os << "    }\n";
  if (!by_block) {
    for (size_t s = 0; s < phase.members.size(); ++s)
      os << "    " << phase.outputs_params[s] << "[o] = static_cast<" << phase.types[s] << ">(a" << phase.members[s]
         << ");\n";
    os << "  }\n";
    return os.str();
  }
  // The block's partial sums halved in shared memory, pairs (t, t + w), until thread 0 holds the sum.
  for (size_t s = 0; s < phase.members.size(); ++s)
    os << "    " << shared << "[" << s * kFusedBlockThreads << " + threadIdx.x] = a" << phase.members[s] << ";\n";
  os << "    __syncthreads();\n"
     << "    for (unsigned w = " << kFusedBlockThreads / 2 << "; w > 0; w /= 2) {\n"
     << "      if (threadIdx.x < w) {\n";
  for (size_t s = 0; s < phase.members.size(); ++s) {
    const std::string at = std::to_string(s * kFusedBlockThreads) + " + threadIdx.x";
    os << "        " << shared << "[" << at << "] += " << shared << "[" << at << " + w];\n";
  }
  os << "      }\n"
     << "      __syncthreads();\n"
     << "    }\n"
     << "    if (threadIdx.x == 0) {\n";
  for (size_t s = 0; s < phase.members.size(); ++s)
    os << "      " << phase.outputs_params[s] << "[o] = static_cast<" << phase.types[s] << ">(" << shared << "["
       << s * kFusedBlockThreads << "]);\n";
  os << "    }\n"
     << "    __syncthreads();  // the partial sums are read before the next output writes them\n"
     << "  }\n";
  return os.str();
}

}  // namespace fused_kernel_detail

bool generates(const Primitive& p) { return p.traits.elementwise && !p.traits.view && has_functor(p); }

FusedKernel generate_fused_kernel(const Jaxpr& j, const runtime::Step& step) {
  using namespace fused_kernel_detail;
  FusedKernel k;
  k.n = step.n;
  k.items = step.n;
  if (step.row_broadcasts > 0 || step.tiled)
    detail::fail<NotImplementedError>("jit", "the CUDA jit generates no code for fused ",
                                      step.tiled ? "tiled products" : "row reads of broadcasts",
                                      " (its lowering does not plan them).");
  // Which externals are written (a member's output read outside the step), and each variable's
  // name in the kernel: parameters p<k> for externals, c<k> for literals, t<m> for member m's value.
  std::vector<int32_t> external_of(j.avals.size(), -1);
  for (size_t e = 0; e < step.externals.size(); ++e) external_of[step.externals[e]] = static_cast<int32_t>(e);
  std::vector<std::string> local(j.avals.size());
  std::vector<int32_t> param_of_external(step.externals.size(), -1);
  std::vector<bool> written(step.externals.size(), false);
  for (const runtime::FusedMember& m : step.members) {
    if (m.row > 0)
      detail::fail<NotImplementedError>("jit", "the CUDA jit generates no code for members reading rows of ",
                                        "broadcasts (its lowering does not plan them).");
    const int32_t out = m.eqn->outputs[0];
    if (external_of[out] >= 0) written[external_of[out]] = true;
  }
  auto external_param = [&](int32_t e) {
    if (param_of_external[e] < 0) {
      FusedKernelParam p;
      p.kind = FusedKernelParam::external;
      p.external_index = e;
      p.dtype = j.avals[step.externals[e]].dtype;
      p.written = written[e];
      p.scalar = !p.written && j.avals[step.externals[e]].shape.size() == 0 && step.n != 1;
      param_of_external[e] = static_cast<int32_t>(k.params.size());
      k.params.push_back(p);
    }
    return param_of_external[e];
  };
  // One walk over the members in order: an input from outside the step becomes a parameter where
  // first read (a pointer loaded once per element, or once per thread when rank-0; a literal by
  // value), a member's value a local, stored when it is read outside the step. Sums are collected
  // by layout (sum_phases) and accumulate after the body.
  std::ostringstream hoisted, body, stores;
  std::vector<SumPhase> phases;
  for (size_t mi = 0; mi < step.members.size(); ++mi) {
    const runtime::FusedMember& m = step.members[mi];
    const Equation& e = *m.eqn;
    const int32_t out = e.outputs[0];
    const std::string out_type = type_name(j.avals[out].dtype);
    if (m.reduce) {
      add_sum(phases, m, local[e.inputs[0].var], "p" + std::to_string(external_param(external_of[out])), out_type,
              static_cast<int>(mi));
      continue;
    }
    local[out] = "t" + std::to_string(mi);
    if (m.broadcast) {
      const Atom& a = e.inputs[0];
      body << "    const " << out_type << " " << local[out] << " = ";
      if (!local[a.var].empty()) {  // a value of the group: the step's shape, so the map is the identity
        if (m.bdims.size() != 1 || m.bsrc[0] != 1)
          detail::fail<NotImplementedError>("jit", "a fused broadcast_in_dim of a value computed in its group ",
                                            "maps elements other than one to one.");
        body << local[a.var] << ";  // broadcast_in_dim (identity)\n";
      } else {
        body << "p" << external_param(external_of[a.var]) << "[" << broadcast_index(m) << "];  // broadcast_in_dim\n";
      }
    } else {
      std::string args;
      for (const Atom& a : e.inputs) {
        if (!args.empty()) args += ", ";
        if (a.is_literal()) {
          FusedKernelParam p;
          p.kind = FusedKernelParam::literal;
          p.dtype = a.literal.dtype();
          p.literal_bits = literal_bits(a.literal);
          args += "c" + std::to_string(k.params.size());
          k.params.push_back(p);
          continue;
        }
        if (local[a.var].empty()) {  // an input from outside the step: loaded once per element
          const int32_t pi = external_param(external_of[a.var]);
          const FusedKernelParam& p = k.params[pi];
          const std::string name = "x" + std::to_string(pi);
          (p.scalar ? hoisted : body) << "    const " << type_name(p.dtype) << " " << name << " = p" << pi
                                      << (p.scalar ? "[0];\n" : "[i];\n");
          local[a.var] = name;
        }
        args += local[a.var];
      }
      body << "    const " << out_type << " " << local[out] << " = "
           << functor_call(*e.primitive, j.avals[out].dtype, args) << ";  // " << e.primitive->name << "\n";
    }
    if (external_of[out] >= 0) stores << "    p" << external_param(external_of[out]) << "[i] = " << local[out] << ";\n";
  }
  std::ostringstream src;
  src << "// A fused group of a Fluxion jit plan (" << step.members.size() << " members), generated by\n"
      << "// backends/cuda/jit/fused_kernel.cpp.\n"
      << kDeviceCode << "\n"
      << functor_source() << "\n"
      << "extern \"C\" __global__ void " << kNamePlaceholder << "(fluxion::cuda::fx_index n";
  for (size_t pi = 0; pi < k.params.size(); ++pi) {
    const FusedKernelParam& p = k.params[pi];
    if (p.kind == FusedKernelParam::literal) src << ", const " << type_name(p.dtype) << " c" << pi;
    else src << ", " << (p.written ? "" : "const ") << type_name(p.dtype) << "* __restrict__ p" << pi;
  }
  src << ") {\n"
      << "  using fluxion::cuda::fx_index;\n"
      << hoisted.str() << "  const fx_index stride = static_cast<fx_index>(gridDim.x) * blockDim.x;\n"
      << "  const fx_index first = static_cast<fx_index>(blockIdx.x) * blockDim.x + threadIdx.x;\n";
  if (phases.empty()) {
    src << "  for (fx_index i = first; i < n; i += stride) {\n" << body.str() << stores.str() << "  }\n";
  } else {
    k.items = 0;
    int64_t shared = 0;
    for (size_t ph = 0; ph < phases.size(); ++ph) {
      SumPhase& phase = phases[ph];
      phase.by_block = phase.suits_blocks() && shared + phase.shared_bytes() <= kSharedBudget;
      if (phase.by_block) shared += phase.shared_bytes();
      k.items = std::max(k.items, phase.by_block ? phase.outputs * kFusedBlockThreads : phase.outputs);
      k.block_sums = k.block_sums || phase.by_block;
      // The first phase visits every element once: it stores the values read outside the step.
      src << sum_phase(phase, body.str() + (ph == 0 ? stores.str() : std::string()), ph);
    }
  }
  src << "}\n";
  std::string text = src.str();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(text)));
  k.name = std::string("fx_fused_") + hex;
  text.replace(text.find(kNamePlaceholder), std::strlen(kNamePlaceholder), k.name);
  k.source = std::move(text);
  return k;
}

std::string emulation_entry(const FusedKernel& kernel) {
  using namespace fused_kernel_detail;
  std::ostringstream os;
  os << "extern \"C\" void " << kernel.name << "_emulate(unsigned grid, unsigned block, void** args) {\n"
     << "  fluxion_jit_emulate_" << (kernel.block_sums ? "synced_" : "") << "grid(grid, block, [&] {\n    "
     << kernel.name << "(*static_cast<const fluxion::cuda::fx_index*>(args[0])";
  for (size_t pi = 0; pi < kernel.params.size(); ++pi) {
    const FusedKernelParam& p = kernel.params[pi];
    const std::string t = type_name(p.dtype);
    if (p.kind == FusedKernelParam::literal)
      os << ",\n        *static_cast<const " << t << "*>(args[" << pi + 1 << "])";
    else os << ",\n        *static_cast<" << t << "* const*>(args[" << pi + 1 << "])";
  }
  os << ");\n  });\n}\n";
  return os.str();
}

std::string keep_failed_source(const std::string& file_name, const std::string& text) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + file_name;
  std::ofstream out(path, std::ios::trunc);
  out << text;
  return out.flush() ? path : std::string();
}

void FusedArgs::prepare(const FusedKernel& kernel) {
  const size_t count = kernel.params.size();
  pointers.resize(count);
  values.resize(count);
  args.resize(count + 1);
  n = kernel.n;
  args[0] = &n;
  for (size_t pi = 0; pi < count; ++pi) {
    const FusedKernelParam& p = kernel.params[pi];
    if (p.kind == FusedKernelParam::literal) {
      values[pi] = p.literal_bits;
      args[pi + 1] = &values[pi];
    } else {
      args[pi + 1] = &pointers[pi];
    }
  }
}

void FusedArgs::bind(const FusedKernel& kernel, const runtime::Step& step, const runtime::RunState& s) {
  for (size_t pi = 0; pi < kernel.params.size(); ++pi) {
    const FusedKernelParam& p = kernel.params[pi];
    if (p.kind == FusedKernelParam::external)
      pointers[pi] = s.values[step.externals[p.external_index]].array("jit").data();
  }
}

}  // namespace fluxion::cuda::jit
