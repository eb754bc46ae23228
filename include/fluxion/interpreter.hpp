/// The interpreter core: the thread-local current interpreter, its RAII scope, and tracer levels.
#pragma once
#include <memory>
#include <vector>

#include "fluxion/primitive.hpp"
#include "fluxion/tensor.hpp"

namespace fluxion {

/// Identity of one interpreter instance, shared with its tracers so they can tell, even after the
/// interpreter is gone, which transform made them and whether it is still running.
struct InterpreterTag {
  const char* transform = "eval";  // "jvp", "vmap", "make_jaxpr", ... for messages
  int level = 0;                   // depth in the interpreter stack; eval is 0
  bool active = true;              // false once the transform has returned
};

/// An interpretation of primitives. `bind` sends every primitive to the current one; a transform's
/// rules run under its parent, so nesting needs no special code.
class Interpreter {
 public:
  /// A new interpreter whose parent is the current one (eval at the bottom).
  explicit Interpreter(const char* transform);
  virtual ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  virtual std::vector<Tensor> process(const Primitive& p, const std::vector<Tensor>& inputs, const Params& params) = 0;

  Interpreter* parent() const { return parent_; }
  const std::shared_ptr<InterpreterTag>& tag() const { return tag_; }
  int level() const { return tag_->level; }
  /// True when `t` is a tracer made by this interpreter.
  bool owns(const Tensor& t) const;
  /// Throws LeakedTracerError (naming `op`) unless `t` is concrete or a tracer of this
  /// interpreter or of an ancestor still running.
  void check_visible(const Tensor& t, const char* op) const;

 protected:
  /// For the bottom (eval) interpreter only.
  struct Root {};
  explicit Interpreter(Root);

 private:
  Interpreter* parent_ = nullptr;
  std::shared_ptr<InterpreterTag> tag_;
};

namespace detail {
/// True on the process's main thread (always true where that cannot be told).
bool is_main_thread();

/// Per-thread objects are created with new and never destroyed on the main thread (clang-repl,
/// the notebook engine, runs thread_local destructors after its JIT'd code is gone); on other
/// threads this deletes `p` when the thread exits.
template <class T> T* delete_at_thread_exit(T* p) {
  struct Reaper {
    T* object = nullptr;
    ~Reaper() { delete object; }
  };
  if (!is_main_thread()) {
    thread_local Reaper reaper;
    reaper.object = p;
  }
  return p;
}
}  // namespace detail

/// The interpreter `bind` dispatches to on this thread.
Interpreter& current_interpreter();
/// The eager interpreter at the bottom of this thread's stack.
Interpreter& eval_interpreter();

/// Installs an interpreter as current for the lifetime of the scope; restores the previous one
/// on exit, including when an exception unwinds through it.
class InterpreterScope {
 public:
  explicit InterpreterScope(Interpreter& interp);
  ~InterpreterScope();
  InterpreterScope(const InterpreterScope&) = delete;
  InterpreterScope& operator=(const InterpreterScope&) = delete;

 private:
  Interpreter* previous_;
};

}  // namespace fluxion
