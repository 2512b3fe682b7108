#pragma once
// A rank's part of every snapshot of a temporal graph (the distributed data path of issue 14):
// the owner of every node at every step, from a snapshot partition series, and the rows a rank
// holds, built from its rows of the first snapshot and then only the deltas touching its rows
// and the rows migrating to it, with the bytes each of those moves.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include <halo/datasets/temporal.hpp>
#include <halo/kernels/types.hpp>
#include <halo/runtime/comm/comm.hpp>

namespace halo::runtime {

/// What moving one snapshot to one rank (or, summed, to all ranks) costs, in bytes.
struct SnapshotTraffic {
  /// The delta pairs (added and removed) with an endpoint the rank owns at this step, 8 bytes
  /// each (two node ids); for snapshot 0, or when those outnumber the snapshot's pairs touching
  /// its rows (`whole`), those pairs instead (its rows sent whole).
  std::int64_t delta_bytes = 0;
  bool whole = false;
  /// The rows that migrate to the rank between the previous step and this one: per row its
  /// id, two counts and its out- and in-neighbour ids, 4 bytes each (what the old owner sends).
  std::int64_t migration_bytes = 0;
  /// Resending the rank's part of the snapshot whole instead: its pairs (8 bytes each) and one
  /// 4-byte input feature (the degree bucket) per owned row.
  std::int64_t resend_bytes = 0;
};

/// A rank's rows of one snapshot: the nodes it owns, ascending, and for each its neighbours in
/// the snapshot made symmetric (u with (v, u) or (u, v) a pair; v itself for a self-loop
/// pair), ascending.
struct TemporalRows {
  std::vector<kernels::NodeId> owned;
  std::vector<std::vector<kernels::NodeId>> neighbours;
};

/// The owner of every node of the run (`num_nodes` of them) at every step of the series in
/// `dir` (partition::write_snapshot_partitions): snapshot 0's assignment (read_assignment)
/// and then the migration plans. A node the series does not hold yet at a step (not seen
/// before it) is owned by the part it is first placed in, so that its arrival moves nothing.
/// halo::IoError naming `dir` when the series does not match the run: another snapshot count,
/// span boundaries or node count, or a part count other than `parts`.
std::vector<std::vector<std::int32_t>> read_snapshot_owners(
    const std::filesystem::path& dir, std::int64_t num_nodes,
    std::span<const std::int64_t> boundaries, std::int32_t parts);

/// This rank's rows of every snapshot of `snapshots` under `owner` (owner[t][v], every node
/// of every step), moved as the unit of issue 14: the rank takes its rows of snapshot 0, then
/// per step t >= 1 the rows whose owner changes travel from their old owner to their new one
/// over `comm` (collective: every rank calls with the same arguments), and then the rank
/// applies the pairs of snapshot_delta(t - 1, t) that touch its rows, or takes its rows of
/// snapshot t whole when they have fewer pairs than that (a sliding window's delta removes
/// most of the previous step). `traffic[t]` receives what the rank received for step t. Host.
std::vector<TemporalRows> distribute_snapshots(std::span<const datasets::Snapshot> snapshots,
                                               const std::vector<std::vector<std::int32_t>>& owner,
                                               Comm& comm, std::vector<SnapshotTraffic>& traffic);

}  // namespace halo::runtime
