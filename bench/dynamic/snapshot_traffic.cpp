// The bytes that move a temporal dataset's snapshots to the ranks of a snapshot partition
// series (runtime::distribute_snapshots), per snapshot and summed over the ranks, against
// resending each snapshot's parts whole. Run under mpiexec with one rank per part:
//   mpiexec -n 2 snapshot_traffic DATASET SERIES_DIR SNAPSHOTS WINDOW_SNAPSHOTS OUT.csv
// (WINDOW_SNAPSHOTS as halo train's --window-snapshots: 1 each step's own events, 0 cumulative).
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include <halo/datasets/registry.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/tasks/link/temporal_part.hpp>

int main(int argc, char** argv) try {
  using namespace halo;
  if (argc != 6) {
    std::fprintf(stderr, "usage: snapshot_traffic DATASET SERIES_DIR SNAPSHOTS WINDOW OUT.csv\n");
    return 2;
  }
  const std::unique_ptr<runtime::Comm> comm = runtime::launcher_world_size() > 1
                                                  ? runtime::make_world_comm()
                                                  : std::make_unique<runtime::SelfComm>();
  const datasets::TemporalGraph g = datasets::load_temporal_dataset(argv[1]);
  datasets::SnapshotConfig c;
  c.num_snapshots = std::stoll(argv[3]);
  c.window_snapshots = std::stoll(argv[4]);
  std::vector<datasets::Snapshot> snaps = datasets::make_snapshots(g, c);
  for (datasets::Snapshot& s : snaps) s.num_nodes = g.num_nodes();  // every node, every step
  const auto owner = runtime::read_snapshot_owners(
      argv[2], g.num_nodes(), datasets::snapshot_boundaries(g, c), comm->size());
  std::vector<runtime::SnapshotTraffic> traffic;
  runtime::distribute_snapshots(snaps, owner, *comm, traffic);
  std::vector<std::int64_t> sums;
  for (const runtime::SnapshotTraffic& t : traffic)
    sums.insert(sums.end(), {t.delta_bytes, t.migration_bytes, t.resend_bytes, t.whole ? 1 : 0});
  comm->allreduce(kernels::Span<std::int64_t>{sums.data(), static_cast<std::int64_t>(sums.size())},
                  runtime::ReduceOp::Sum);
  if (comm->rank() == 0) {
    std::string csv = "snapshot,pairs,delta_bytes,migration_bytes,resend_bytes,ranks_whole\n";
    std::int64_t delta = 0, migration = 0, resend = 0;
    for (std::size_t t = 0; t < traffic.size(); ++t) {
      const std::int64_t* s = &sums[4 * t];
      csv += std::to_string(t) + "," + std::to_string(snaps[t].edges.size()) + "," +
             std::to_string(s[0]) + "," + std::to_string(s[1]) + "," + std::to_string(s[2]) + "," +
             std::to_string(s[3]) + "\n";
      if (t > 0) delta += s[0], migration += s[1], resend += s[2];
    }
    kernels::write_file_atomically(argv[5], csv);
    std::printf(
        "%zu snapshots, %d ranks; snapshots 1..%zu summed over the ranks: deltas %lld B, "
        "migration %lld B, together %.3f of resending (%lld B); snapshot 0 (initial load) %lld B\n",
        traffic.size(), comm->size(), traffic.size() - 1, static_cast<long long>(delta),
        static_cast<long long>(migration),
        static_cast<double>(delta + migration) / static_cast<double>(resend),
        static_cast<long long>(resend), static_cast<long long>(sums[0]));
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "snapshot_traffic: %s\n", e.what());
  return 1;
}
