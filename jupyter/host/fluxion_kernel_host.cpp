/// The C++ side of Fluxion's Jupyter kernel (jupyter/fluxion_kernel): one clang::Interpreter session that runs the
/// notebook's cells in order.
///
///   fluxion_kernel_host --cells FD --control FD --flags FILE [--preload HEADER] [clang flags ...]
///
/// Cells arrive on fd --cells as a 4-byte little-endian length followed by the UTF-8 source. For each cell the host
/// writes, on fd --control, zero or more display messages and then one reply, each a 4-byte length followed by a
/// JSON object:
///   {"type":"display","result":false,"data":{mime bundle}}   (result: the value of the cell's last expression)
///   {"type":"reply","status":"ok"}
///   {"type":"reply","status":"error","ename":"fluxion::ShapeError","evalue":"what()"}
///   {"type":"reply","status":"error","ename":"CompileError","evalue":"diagnostics"}
/// and {"type":"ready"} once, after start-up: after HEADER (the headers a notebook's first cell includes) has been
/// parsed, so that the kernel parses them while the notebook is being opened and the first cell finds them done.
/// A problem with HEADER is {"type":"ready","status":"error",...} and the session goes on without it. After a
/// display message the host waits for one byte on fd --cells.
/// What the cells print goes to fds 1 and 2 as it is printed (stdout is line buffered); the host flushes both before
/// each control message, so a reader that drains fds 1 and 2 before handling a control message keeps the order in
/// which things were printed and displayed.
///
/// The interpreter gets the flags file's lines (one flag per line: the library's target flags, definitions and
/// include paths) followed by the extra arguments. The Fluxion library is linked into this executable (whole
/// archive, symbols exported), so cells resolve its symbols from the process instead of compiling the implementation.
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <exception>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <typeinfo>
#include <unistd.h>
#include <vector>

#include "clang/AST/ASTContext.h"
#include "clang/AST/PrettyPrinter.h"
#include "clang/AST/Type.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/FileManager.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "clang/Interpreter/Interpreter.h"
#include "clang/Interpreter/Value.h"
#include "clang/Lex/DirectoryLookup.h"
#include "clang/Lex/HeaderSearch.h"
#include "clang/Lex/Preprocessor.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

namespace fluxion_kernel_host {

int control_fd = -1;
int cells_fd = -1;
volatile std::sig_atomic_t interrupted = 0;

/// Writes all of `data` to `fd`, retrying after signals; false when the reader is gone.
bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

/// Reads exactly `size` bytes; false at end of input.
bool read_all(int fd, char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void flush_user_output() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
}

/// One length-prefixed message on the control fd, after what the cell printed so far.
void send_control(const std::string& json) {
  flush_user_output();
  const uint32_t n = static_cast<uint32_t>(json.size());
  const unsigned char header[4] = {static_cast<unsigned char>(n), static_cast<unsigned char>(n >> 8),
                                   static_cast<unsigned char>(n >> 16), static_cast<unsigned char>(n >> 24)};
  if (!write_all(control_fd, reinterpret_cast<const char*>(header), 4) ||
      !write_all(control_fd, json.data(), json.size()))
    std::_Exit(0);  // the kernel is gone: nothing is left to report to
}

/// Publishes a mime bundle (a JSON object) as display_data, then waits for the kernel's acknowledgement (one byte on
/// the cells pipe): by then the kernel has forwarded everything printed before, and nothing printed after can
/// overtake the display.
void send_display(const std::string& bundle, bool is_result = false) {
  send_control("{\"type\":\"display\",\"result\":" + std::string(is_result ? "true" : "false") + ",\"data\":" + bundle +
               "}");
  char ack;
  if (!read_all(cells_fd, &ack, 1)) std::_Exit(0);
}

/// `text` as a JSON string literal (bytes >= 0x80 pass through: the text is UTF-8).
std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : mangled;
}

std::string error_reply(const std::string& ename, const std::string& evalue) {
  return "{\"type\":\"reply\",\"status\":\"error\",\"ename\":" + json_string(ename) +
         ",\"evalue\":" + json_string(evalue) + "}";
}

/// Adds `dir` to the interpreter's #include <...> and "..." search path (what cling's add_include_path does).
bool add_include_path(clang::Interpreter& interp, const std::string& dir) {
  clang::CompilerInstance& ci = *interp.getCompilerInstance();
  auto entry = ci.getFileManager().getOptionalDirectoryRef(dir);
  if (!entry) return false;
  clang::HeaderSearch& search = ci.getPreprocessor().getHeaderSearchInfo();
  search.AddSearchPath(clang::DirectoryLookup(*entry, clang::SrcMgr::C_User, /*isFramework=*/false),
                       /*isAngled=*/true);
  return true;
}

/// The cell with each `#pragma cling add_include_path("dir")` line applied (relative to the working directory, the
/// notebook's) and blanked, so that line numbers in diagnostics stay those of the cell. Empty `problem` when fine.
std::string apply_pragmas(clang::Interpreter& interp, const std::string& cell, std::string& problem) {
  std::string out;
  size_t start = 0;
  while (start <= cell.size()) {
    size_t end = cell.find('\n', start);
    if (end == std::string::npos) end = cell.size();
    std::string line = cell.substr(start, end - start);
    const size_t hash = line.find_first_not_of(" \t");
    bool blank = false;
    if (hash != std::string::npos && line[hash] == '#') {
      std::string words;  // the directive with its spaces removed: #pragmacling...
      for (char c : line.substr(hash)) {
        if (c != ' ' && c != '\t') words += c;
      }
      if (words.rfind("#pragmacling", 0) == 0) {
        blank = true;
        const size_t open = line.find('"'), close = line.rfind('"');
        if (words.rfind("#pragmaclingadd_include_path(\"", 0) == 0 && open != close) {
          std::string dir = line.substr(open + 1, close - open - 1);
          if (!add_include_path(interp, dir))
            problem += "#pragma cling add_include_path: no directory \"" + dir + "\" (relative to the notebook)\n";
        } else {
          problem += "unsupported cling pragma (only add_include_path is): " + line + "\n";
        }
      }
    }
    out += blank ? "" : line;
    if (end < cell.size()) out += '\n';
    start = end + 1;
  }
  return out;
}

/// The text/plain display of a cell's last expression when it is a number or bool ("(int) 5"), as xeus-cpp shows
/// it; empty for other values (objects are shown with xcpp::display).
std::string scalar_text(const clang::Value& value) {
  if (!value.hasValue()) return "";
  const clang::QualType type = value.getType();
  std::ostringstream os;
  os << "(" << type.getAsString() << ") ";
  if (type->isBooleanType()) os << (value.convertTo<bool>() ? "true" : "false");
  else if (type->isSignedIntegerType()) os << value.convertTo<long long>();
  else if (type->isUnsignedIntegerType()) os << value.convertTo<unsigned long long>();
  else if (type->isFloatingType()) os << std::setprecision(17) << value.convertTo<double>();
  else return "";
  return os.str();
}

/// For a cell whose last expression (no `;`) is an object: a cell that shows it as the cell's result, as xeus-cpp
/// does (its mime_bundle_repr: a tensor's HTML table, a Jaxpr's drawing); empty for other values. The object lives
/// in `value` until the cell's reply.
std::string object_display_cell(const clang::Value& value, const clang::ASTContext& context) {
  if (!value.hasValue()) return "";
  const clang::QualType object = value.getType().getNonReferenceType();  // `t` is a Tensor&, at the variable's address
  if (!object->isRecordType() || value.getPtr() == nullptr) return "";
  clang::PrintingPolicy policy(context.getLangOpts());
  policy.FullyQualifiedName = true;
  policy.SuppressTagKeyword = true;
  const std::string type = object.getCanonicalType().getUnqualifiedType().getAsString(policy);
  char address[32];
  std::snprintf(address, sizeof address, "%p", value.getPtr());
  return "xcpp::detail::display_result(*static_cast<const " + type + "*>(reinterpret_cast<const void*>(" + address +
         ")));";
}

/// Diagnostics of the current cell, collected so that an error reply can carry them.
struct CellDiagnostics {
  std::string text;
  llvm::raw_string_ostream stream{text};
};

/// Runs one cell; the reply message (ok, a C++ exception, or compile errors).
std::string run_cell(clang::Interpreter& interp, CellDiagnostics& diags, const std::string& cell) {
  diags.text.clear();
  std::string problem;
  const std::string code = apply_pragmas(interp, cell, problem);
  if (!problem.empty()) return error_reply("PragmaError", problem);
  interrupted = 0;
  std::string reply;
  try {
    clang::Value value;  // the last expression's value when the cell ends without `;` (never printed by clang)
    if (llvm::Error err = interp.ParseAndExecute(code, &value)) {
      const std::string message = llvm::toString(std::move(err));
      diags.stream.flush();
      reply = error_reply("CompileError", diags.text.empty() ? message : diags.text);
      diags.text.clear();
    } else if (const std::string text = scalar_text(value); !text.empty()) {
      send_display("{\"text/plain\":" + json_string(text) + "}", /*is_result=*/true);
    } else if (const std::string show = object_display_cell(value, interp.getASTContext()); !show.empty()) {
      // Types xcpp::display cannot show (a lambda, no <xcpp/xdisplay.hpp> yet) are left unshown, silently.
      llvm::consumeError(interp.ParseAndExecute(show));
      diags.stream.flush();
      diags.text.clear();
    }
  } catch (const std::exception& e) { reply = error_reply(demangle(typeid(e).name()), e.what()); } catch (...) {
    const std::type_info* type = abi::__cxa_current_exception_type();
    reply = error_reply(type ? demangle(type->name()) : "unknown exception",
                        "a C++ exception not derived from std::exception");
  }
  diags.stream.flush();
  if (!diags.text.empty()) {  // warnings of a cell that ran
    std::cerr << diags.text;
    diags.text.clear();
  }
  return reply.empty() ? "{\"type\":\"reply\",\"status\":\"ok\"}" : reply;
}

void on_sigint(int) { interrupted = 1; }

int main(int argc, char** argv) {
  std::string flags_file, preload;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--cells" && i + 1 < argc) cells_fd = std::atoi(argv[++i]);
    else if (a == "--control" && i + 1 < argc) control_fd = std::atoi(argv[++i]);
    else if (a == "--flags" && i + 1 < argc) flags_file = argv[++i];
    else if (a == "--preload" && i + 1 < argc) preload = argv[++i];
    else args.push_back(a);
  }
  if (cells_fd < 0 || control_fd < 0 || flags_file.empty()) {
    std::fprintf(stderr, "usage: %s --cells FD --control FD --flags FILE [--preload HEADER] [clang flags ...]\n",
                 argv[0]);
    return 2;
  }
  std::vector<std::string> flags;
  std::ifstream in(flags_file);
  if (!in) {
    std::fprintf(stderr, "fluxion_kernel_host: cannot read the flags file %s\n", flags_file.c_str());
    return 2;
  }
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) flags.push_back(line);
  }
  flags.insert(flags.end(), args.begin(), args.end());

  // SIGINT (the kernel's interrupt) only sets a flag: a cell waiting in a system call returns early, and the
  // kernel restarts the host when a busy cell does not return.
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::InitializeNativeTargetAsmParser();  // inline assembly (Eigen has some)
  std::vector<const char*> argv_clang;
  for (const std::string& f : flags) argv_clang.push_back(f.c_str());
  clang::IncrementalCompilerBuilder builder;
  builder.SetCompilerArgs(argv_clang);
  auto ci = builder.CreateCpp();
  if (!ci) {
    std::fprintf(stderr, "fluxion_kernel_host: %s\n", llvm::toString(ci.takeError()).c_str());
    return 1;
  }
  // Diagnostics go to a per-cell buffer: compile errors become the cell's error, warnings go to stderr.
  CellDiagnostics diags;
  clang::CompilerInstance& compiler = **ci;
  auto* printer = new clang::TextDiagnosticPrinter(diags.stream, &compiler.getDiagnosticOpts());
  compiler.getDiagnostics().setClient(printer, /*ShouldOwnClient=*/true);
  auto interp = clang::Interpreter::create(std::move(*ci));
  if (!interp) {
    diags.stream.flush();
    std::fprintf(stderr, "fluxion_kernel_host: %s%s\n", diags.text.c_str(), llvm::toString(interp.takeError()).c_str());
    return 1;
  }
  (*interp)->getCompilerInstance()->getDiagnostics().getClient()->BeginSourceFile(
      (*interp)->getCompilerInstance()->getLangOpts(), &(*interp)->getCompilerInstance()->getPreprocessor());
  diags.stream.flush();
  if (!diags.text.empty()) std::cerr << diags.text;
  diags.text.clear();
  std::string ready = "{\"type\":\"ready\"}";
  if (!preload.empty()) {
    ready = run_cell(**interp, diags, "#include " + json_string(preload) + "\n");  // a JSON string is a C++ one here
    ready.replace(ready.find("\"reply\""), 7, "\"ready\"");
  }
  send_control(ready);

  for (;;) {
    char header[4];
    if (!read_all(cells_fd, header, 4)) return 0;  // the kernel closed the pipe: shut down
    const uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(header[0])) |
                       static_cast<uint32_t>(static_cast<unsigned char>(header[1])) << 8 |
                       static_cast<uint32_t>(static_cast<unsigned char>(header[2])) << 16 |
                       static_cast<uint32_t>(static_cast<unsigned char>(header[3])) << 24;
    std::string cell(n, '\0');
    if (!read_all(cells_fd, cell.data(), n)) return 0;
    send_control(run_cell(**interp, diags, cell));
  }
}

}  // namespace fluxion_kernel_host

int main(int argc, char** argv) { return fluxion_kernel_host::main(argc, argv); }

/// Called by the kernel's <xcpp/xdisplay.hpp> (xcpp::display): publishes a mime bundle (a JSON object) as the
/// cell's display_data.
extern "C" __attribute__((visibility("default"))) void fluxion_kernel_display(const char* json, size_t size) {
  fluxion_kernel_host::send_display(std::string(json, size));
}

/// The same as the cell's result (execute_result, Out[n]): the value of a last expression without ';'.
extern "C" __attribute__((visibility("default"))) void fluxion_kernel_display_result(const char* json, size_t size) {
  fluxion_kernel_host::send_display(std::string(json, size), /*is_result=*/true);
}
