#pragma once
// The on-disk series of snapshot partitions: one partition directory per snapshot, the
// migration plans between consecutive ones, and a meta.json with every snapshot's metrics.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <halo/datasets/temporal.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/partition/partitioners/partitioner.hpp>
#include <halo/partition/partitioners/repartition.hpp>

namespace halo::partition {

/// The version of a series' meta.json (`format` "halo-snapshot-partitions"); readers refuse
/// any other.
constexpr std::int32_t kSnapshotSeriesVersion = 1;

/// What one snapshot of a series recorded (meta.json's `snapshots[t]`).
struct SnapshotRecord {
  std::int64_t index = 0;
  std::int64_t time_begin = 0;
  std::int64_t time_end = 0;
  std::int64_t num_nodes = 0;
  /// Distinct directed pairs of the snapshot (datasets::Snapshot::edges).
  std::int64_t num_pairs = 0;
  /// The delta from the previous snapshot (all pairs for snapshot 0).
  std::int64_t pairs_added = 0;
  std::int64_t pairs_removed = 0;
  std::int64_t new_nodes = 0;
  std::int64_t migrated = 0;
  bool from_scratch = false;
  std::int64_t edge_cut = 0;
  std::int64_t comm_volume = 0;
  std::int64_t max_halo = 0;
  /// Nodes balance (max / mean part size).
  double balance = 1.0;
  /// Wall time of the assignment.
  double seconds = 0;
};

/// The snapshot graphs of `g` as graph-only datasets (datasets::graph_only_dataset on
/// snapshot_graph), partitioned one after the other by repartition_snapshot, each from the
/// previous one's assignment. `visit(t, snapshot, dataset, result, record)` is called for
/// every snapshot in order (`result` holds the partition of `dataset`, ready for
/// write_partitions). Returns the records.
using SnapshotVisitor =
    std::function<void(std::int64_t, const datasets::Snapshot&, const datasets::Dataset&,
                       const PartitionResult&, const SnapshotRecord&)>;
std::vector<SnapshotRecord> partition_snapshots(const kernels::Resources& res,
                                                const datasets::TemporalGraph& g,
                                                const datasets::SnapshotConfig& snapshots,
                                                const RepartitionConfig& config,
                                                const SnapshotVisitor& visit = {});

/// Partitions every snapshot (partition_snapshots) and writes the series to `dir`
/// (docs/formats.md, "Snapshot partition series"): `snapshot-<t>/` a partition directory of
/// snapshot t (write_partitions), `migration-<t>.tsv` for t >= 1 the MigrationPlan from
/// snapshot t-1 to t, `node_ids.txt` the file id of every node, and `meta.json`. Written
/// into a temporary sibling renamed to `dir` at the end; `dir` must not exist or be empty
/// (halo::IoError). Returns the records.
std::vector<SnapshotRecord> write_snapshot_partitions(const kernels::Resources& res,
                                                      const datasets::TemporalGraph& g,
                                                      const datasets::SnapshotConfig& snapshots,
                                                      const RepartitionConfig& config,
                                                      const std::filesystem::path& dir,
                                                      const Progress& progress = {});

/// The contents of a series' meta.json.
struct SnapshotSeriesMeta {
  std::string dataset;
  std::int64_t num_nodes = 0;
  std::int64_t num_events = 0;
  datasets::SnapshotConfig snapshots;
  /// The span boundaries (records.size() + 1 of them).
  std::vector<std::int64_t> boundaries;
  RepartitionConfig config;
  std::vector<SnapshotRecord> records;
};

/// Whether `dir`/meta.json names the series format (false when it is missing or another format).
bool is_snapshot_series(const std::filesystem::path& dir);

/// Reads and checks `dir`/meta.json of a series (format name and version, one record per
/// snapshot). halo::IoError naming the file and the problem.
SnapshotSeriesMeta read_snapshot_series_meta(const std::filesystem::path& dir);

/// Verifies a series: every snapshot partition's checksums (verify_partitions) and that every
/// migration plan turns snapshot t-1's assignment into snapshot t's (read_assignment,
/// apply_migration). halo::IoError naming the first file that does not match. Returns the
/// number of snapshots.
std::int64_t verify_snapshot_partitions(const kernels::Resources& res,
                                        const std::filesystem::path& dir);

/// Reads a migration-<t>.tsv (halo::IoError "<file>:<line>: ..." when malformed).
MigrationPlan read_migration_plan(const std::filesystem::path& file);

/// The part of every node (by the dataset's node id) of the partition directory `dir`, from
/// its parts' owned original ids (read_part on every part).
std::vector<std::int32_t> read_assignment(const kernels::Resources& res,
                                          const std::filesystem::path& dir);

}  // namespace halo::partition
