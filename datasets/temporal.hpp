#pragma once
// Temporal graphs: time-stamped events, the snapshots cut from them, and the differences
// (deltas) between consecutive snapshots, the unit that travels to ranks and devices.

#include <compare>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <halo/datasets/dataset.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::datasets {

/// The column layout of an event file (docs/formats.md, "Temporal event lists").
enum class TemporalLayout {
  /// A header line naming the columns decides (`# src dst rating time`, `SOURCE,TARGET,
  /// RATING,TIME`); without one, 3 columns are SrcDstTime and 4 columns SrcDstTimeWeight; and
  /// a "time" column that cannot be time (a few values repeated over thousands of events, as
  /// ratings are) is refused by name rather than trained on.
  Auto,
  SrcDstTime,        ///< `src dst t` (SNAP temporal networks: CollegeMsg, sx-*, wiki-talk)
  SrcDstTimeWeight,  ///< `src dst t rating`: CollegeMsg's layout with a rating or sign after it
  SrcDstWeightTime,  ///< `src,dst,rating,t` (SNAP signed networks: soc-sign-bitcoin{alpha,otc})
};

/// The layout `--columns` names: "src,dst,t" (also "time"), "src,dst,t,rating" or
/// "src,dst,rating,t" ("weight" and "sign" are read as "rating"); "auto" is Auto. halo::LogicError
/// naming the text otherwise.
TemporalLayout parse_temporal_layout(const std::string& columns);

/// Time-sorted directed events (src -> dst at time t, with an optional integer weight). Node
/// ids are dense: node v is the v-th distinct file id to appear when the events are walked in
/// time order (ties in file order; src before dst), so the nodes seen before any time form a
/// prefix [0, n) of the ids. Host memory; copyable.
struct TemporalGraph {
  std::string name;
  /// original_ids[v]: node v's id in the file.
  std::vector<std::int64_t> original_ids;
  /// One entry per event, sorted by time (stable: ties keep their file order).
  std::vector<NodeId> src;
  std::vector<NodeId> dst;
  std::vector<std::int64_t> time;
  /// The rating or sign of each event; empty for a layout without one.
  std::vector<std::int64_t> weight;

  std::int64_t num_nodes() const { return static_cast<std::int64_t>(original_ids.size()); }
  std::int64_t num_events() const { return static_cast<std::int64_t>(time.size()); }
};

/// One event as a source gives it: ids as in the source, in any order.
struct RawTemporalEvent {
  std::int64_t src = 0;
  std::int64_t dst = 0;
  std::int64_t time = 0;
  std::int64_t weight = 0;
};

/// The temporal graph of `events`: sorted by time (stable) and renumbered as TemporalGraph
/// describes; the weights kept when `weighted`. halo::IoError naming `where` for negative ids
/// or more than 2^31 - 1 distinct ids. Host.
TemporalGraph make_temporal_graph(std::vector<RawTemporalEvent> events, bool weighted,
                                  const std::string& where);

/// Reads an event list: one event per line, fields separated by blanks (spaces, tabs) or
/// commas; `#` and `%` lines and blank lines skipped (a first such line, or a first line of
/// words, that names every column is the header Auto follows); every field a decimal integer;
/// ids non-negative; times any int64 (Unix seconds in SNAP's files); all data lines with the
/// same number of fields (3 or 4 under Auto). Sorts the events by time (stable) and renumbers
/// the ids as TemporalGraph describes. halo::IoError "<file>:<line>: expected ..., got ..." on
/// a malformed line; under Auto, halo::IoError naming the file when its time column holds at
/// most 32 distinct values over 1000 events or more. Host; O(events log events).
TemporalGraph read_temporal_events(const std::filesystem::path& path,
                                   TemporalLayout layout = TemporalLayout::Auto);

/// How events are cut into snapshots. Exactly one of num_snapshots, window_seconds is > 0.
struct SnapshotConfig {
  /// N snapshots of equal time spans over [t_min, t_max] (--snapshots).
  std::int64_t num_snapshots = 0;
  /// Spans of this many seconds from t_min (--snapshot-window); the last may be partial.
  std::int64_t window_seconds = 0;
  /// 0: cumulative (snapshot i holds every event before its span's end); W >= 1: sliding
  /// (snapshot i holds the events of spans i-W+1 .. i) (--window-snapshots).
  std::int64_t window_snapshots = 0;
};

/// The N + 1 span boundaries b_0 < ... (non-decreasing) of `g` under `config`: span i is
/// [b_i, b_{i+1}). With D = t_max - t_min + 1 (0 without events, t_min then 0):
/// num_snapshots N gives b_i = t_min + floor(i * D / N); window_seconds S gives
/// N = max(1, ceil(D / S)) and b_i = t_min + i * S, the last boundary t_max + 1 (so
/// `--snapshot-window 190080` on CollegeMsg gives EvolveGCN's 89 steps 0..88: its step of an
/// event is (t - t_min) div 190080). halo::LogicError for an invalid config.
std::vector<std::int64_t> snapshot_boundaries(const TemporalGraph& g, const SnapshotConfig& config);

/// One directed edge of a snapshot.
struct TemporalEdge {
  NodeId src = 0;
  NodeId dst = 0;
  friend auto operator<=>(const TemporalEdge&, const TemporalEdge&) = default;
};

/// The graph of one time window: nodes [0, num_nodes) are those seen in an event before
/// time_end (a node stays once seen, also after its edges leave a sliding window); `edges`
/// are the distinct (src, dst) pairs of the events in [time_begin, time_end), sorted (repeated
/// events merged; self-loops kept, as listed).
struct Snapshot {
  std::int64_t time_begin = 0;
  std::int64_t time_end = 0;
  std::int64_t num_nodes = 0;
  std::vector<TemporalEdge> edges;
  friend bool operator==(const Snapshot&, const Snapshot&) = default;
};

/// What turns snapshot t into snapshot t + 1: the new window, the new nodes
/// [num_nodes_before, num_nodes_after), the pairs that appear and the pairs that disappear
/// (both sorted, disjoint). Its size is what moving snapshot t + 1 to a holder of snapshot t
/// costs: 8 bytes per listed pair.
struct SnapshotDelta {
  std::int64_t time_begin = 0;
  std::int64_t time_end = 0;
  std::int64_t num_nodes_before = 0;
  std::int64_t num_nodes_after = 0;
  std::vector<TemporalEdge> added;
  std::vector<TemporalEdge> removed;
  friend bool operator==(const SnapshotDelta&, const SnapshotDelta&) = default;
};

/// The snapshots of `g` under `config`, one per span of snapshot_boundaries. Host;
/// O(events log events + sum of snapshot sizes).
std::vector<Snapshot> make_snapshots(const TemporalGraph& g, const SnapshotConfig& config);

/// The delta from `from` to `to` (to.num_nodes must be >= from.num_nodes: halo::LogicError).
SnapshotDelta snapshot_delta(const Snapshot& from, const Snapshot& to);

/// `from` with `delta` applied: equal to `to` when delta = snapshot_delta(from, to).
/// halo::LogicError when the delta does not fit `from` (a removed pair absent, an added pair
/// present, a node count that differs).
Snapshot apply_delta(const Snapshot& from, const SnapshotDelta& delta);

/// The snapshot as a graph: num_nodes x num_nodes, edge (src, dst) in column src of row dst
/// (the edge-list convention), rows sorted, unweighted. Host.
Graph snapshot_graph(const kernels::Resources& res, const Snapshot& s);

/// The whole event list as one static graph (every distinct pair, nodes as in `g`). Host.
Graph aggregate_graph(const kernels::Resources& res, const TemporalGraph& g);

}  // namespace halo::datasets
