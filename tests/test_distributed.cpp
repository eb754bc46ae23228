// fx::distributed in one process, with or without MPI in the build: the axis-name registry and its
// error, settings, the state before init(), and init's refusal when nothing launched the process.
// (The multi-process tests are in tests/mpi/, run by mpirun when Fluxion is built with MPI.)
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/distributed/engine.hpp"
#include "backends/distributed/transport.hpp"
#include "fluxion/distributed.hpp"
#include "fluxion/errors.hpp"

namespace dist = fluxion::distributed;
namespace dd = fluxion::distributed_detail;

namespace {

template <class F> std::string error_text(F&& f) {
  try {
    f();
  } catch (const fluxion::Error& e) { return e.what(); }
  return "";
}

// An in-process group of one: every collective copies send to recv (what a world of one computes).
struct LoopbackTransport : dd::Transport {
  int calls = 0;
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "loopback group of 1 rank"; }
  void run(const dd::CollectiveCall& call) override {
    ++calls;
    auto* out = static_cast<double*>(call.recv);
    const auto* in = static_cast<const double*>(call.send);
    for (int64_t i = 0; i < call.recv_count; ++i) out[i] = in[i];
  }
};

}  // namespace

TEST_CASE("distributed: before init") {
  CHECK_FALSE(dist::initialized());
  CHECK(dist::rank() == 0);
  CHECK(dist::size() == 1);
  CHECK(error_text([] { dist::world(); }) ==
        "[distributed.world] the process group is not initialized. Call fx::distributed::init() first.");
  CHECK(error_text([] { dist::new_group({0}, "g"); }).find("not initialized") != std::string::npos);
  dist::finalize();  // safe when not initialized
  CHECK_FALSE(dist::initialized());
}

TEST_CASE("distributed: init without a launch, or without MPI, says what to do") {
  if (dist::launched()) return;  // this suite runs without mpirun
  std::string e = error_text([] { dist::init(); });
  if (dist::compiled()) {
    CHECK(e.find("[distributed.init] this process was not started by mpirun/mpiexec or srun") == 0);
    CHECK(e.find("mpirun -np 2") != std::string::npos);
  } else {
    CHECK(e.find("[distributed.init] this build of Fluxion has no MPI") == 0);
    CHECK(e.find("apt-get install libopenmpi-dev openmpi-bin") != std::string::npos);
    CHECK(e.find("FLUXION_MPI=AUTO") != std::string::npos);
    CHECK(error_text([] { dist::init(dist::Backend::mpi); }).find("has no MPI") != std::string::npos);
  }
  CHECK_FALSE(dist::initialized());
}

TEST_CASE("distributed: an axis name with nothing bound names the op, the name and the fix") {
  std::string e = error_text([] { dd::transport_for_axis("batch", "all_sum"); });
  CHECK(e ==
        "[all_sum] axis name 'batch' is not bound: no enclosing fx::vmap(f, ..., fx::axis_name(\"batch\")) "
        "and no process group registered under it (none is registered). Bind it with such a vmap, or call "
        "fx::distributed::init() (or new_group) under that name.");
  CHECK_THROWS_AS(dd::transport_for_axis("batch", "all_sum"), fluxion::AxisError);
}

TEST_CASE("distributed: the registry hands out registered transports") {
  auto loopback = std::make_shared<LoopbackTransport>();
  dd::register_axis("loop", loopback);
  CHECK(dd::axis_registered("loop"));
  CHECK(error_text([&] { dd::register_axis("loop", loopback); }).find("'loop' is already registered") !=
        std::string::npos);
  std::vector<double> send = {1, 2}, recv(2);
  dd::CollectiveCall call;
  call.op = "all_sum";
  call.kind = dd::CollectiveKind::all_reduce;
  call.dtype = fluxion::DType::f64;
  call.send = send.data();
  call.recv = recv.data();
  call.send_count = call.recv_count = 2;
  dd::transport_for_axis("loop", "all_sum").run(call);
  CHECK(recv == send);
  CHECK(loopback->calls == 1);
  CHECK(error_text([] { dd::transport_for_axis("other", "all_gather"); }).find("(registered: 'loop')") !=
        std::string::npos);
  dd::unregister_axis("loop");
  CHECK_FALSE(dd::axis_registered("loop"));
}

TEST_CASE("distributed: timeout setting") {
  CHECK(dist::timeout() > 0);
  dist::set_timeout(2.5);
  CHECK(dist::timeout() == 2.5);
  CHECK(error_text([] { dist::set_timeout(-1); }).find("[distributed.set_timeout] the timeout must be a positive") ==
        0);
  CHECK(dist::timeout() == 2.5);
  dist::set_timeout(60);
}
