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
#include <halo/kernels/resources.hpp>
#include <halo/kernels/types.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/comm/comm.hpp>

namespace halo::runtime {

/// What moving one snapshot to one rank (or, summed, to all ranks) costs, in bytes.
struct SnapshotTraffic {
  /// The delta pairs (added and removed) with an endpoint the rank owns at this step, 8 bytes
  /// each (two node ids); for snapshot 0, or when those and the migrating rows cost more than
  /// the snapshot's pairs touching its rows (`whole`), those pairs instead (its rows sent
  /// whole, no migration).
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
/// applies the pairs of snapshot_delta(t - 1, t) that touch its rows; or, when its rows of
/// snapshot t whole cost fewer bytes than those delta pairs and the rows migrating to it
/// together (a sliding window's delta removes most of the previous step), it takes them whole
/// and the rows migrating to it do not travel. So a step never costs a rank more than
/// resending its rows. `traffic[t]` receives what the rank received for step t. Host.
std::vector<TemporalRows> distribute_snapshots(std::span<const datasets::Snapshot> snapshots,
                                               const std::vector<std::vector<std::int32_t>>& owner,
                                               Comm& comm, std::vector<SnapshotTraffic>& traffic);

/// A rank's GCN view of one snapshot, built from its rows (distribute_snapshots) and the owner
/// of every node at that step (owner[v] for every node of the run):
///   - part: what runtime::HaloExchange aggregates over. Its graph is the owned rows of the
///     snapshot made symmetric, self-loops left out (the GCN adds I; a self-loop pair counts
///     once, as datasets::gcn_normalize counts it); local ids are the owned nodes ascending,
///     then the halo (the owned rows' other neighbours) by owner, ascending within each, as a
///     partition::Part numbers them. degrees holds every local node's neighbour count without
///     its self-loop, the halo's received from their owners; the send and receive lists are the
///     owned rows a peer's rows neighbour and the halo per owner (the snapshot is symmetric, so
///     each side derives the other's lists from its own rows, no request needed);
///   - degree: each owned row's neighbour count, its self-loop counted (min
///     datasets::kMaxDegreeBucket): its one-hot input column before the run caps it;
///   - degree_bytes: the bytes of halo degrees this rank received (8 per halo row).
/// Collective over `comm` (the halo degrees). Host.
struct TemporalStepPart {
  partition::Part part;
  std::vector<std::int32_t> degree;
  std::int64_t degree_bytes = 0;
};
TemporalStepPart temporal_step_part(const kernels::Resources& res, const TemporalRows& rows,
                                    std::span<const std::int32_t> owner, Comm& comm);

}  // namespace halo::runtime
