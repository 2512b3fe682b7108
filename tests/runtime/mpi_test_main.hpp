#pragma once
// The main of an MPI test executable: every rank runs every test, rank 0 prints the report,
// the other ranks only their failures, and the exit status is non-zero when a test failed on
// any rank.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <gtest/gtest.h>
#include <memory>

#include <halo/runtime/comm/comm.hpp>

namespace halo::runtime::test {

/// Ranks other than 0 print only their failures, prefixed with the rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : m_rank(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", m_rank,
                   r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }

 private:
  int m_rank;
};

/// `use_world` receives the world communicator before the tests; `after_tests` runs on every
/// rank after them, before the ranks agree on the result (to release what the tests kept).
inline int run_mpi_tests(int argc, char** argv, const char* name,
                         const std::function<void(Comm&)>& use_world,
                         const std::function<void()>& after_tests = {}) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::unique_ptr<Comm> comm = make_world_comm();
  use_world(*comm);
  if (comm->rank() != 0) {  // one report, rank 0's, plus every other rank's failures
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(comm->rank()));
  }
  std::int64_t failed = RUN_ALL_TESTS() != 0;
  if (after_tests) after_tests();
  failed = comm->sum(failed);
  if (failed > 0 && comm->rank() == 0)
    std::fprintf(stderr, "%s: failures on %lld rank(s)\n", name, static_cast<long long>(failed));
  return failed > 0 ? 1 : 0;
}

}  // namespace halo::runtime::test
