// A rank's part of every snapshot: owners from a snapshot partition series, rows built from
// the first snapshot and then the deltas and migrated rows only.
#include <algorithm>
#include <iterator>
#include <map>
#include <string>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/partition/formats/snapshot_format.hpp>
#include <halo/runtime/tasks/link/temporal_part.hpp>

namespace halo::runtime {

using datasets::TemporalEdge;
using kernels::NodeId;

std::vector<std::vector<std::int32_t>> read_snapshot_owners(
    const std::filesystem::path& dir, std::int64_t num_nodes,
    std::span<const std::int64_t> boundaries, std::int32_t parts) {
  const partition::SnapshotSeriesMeta meta = partition::read_snapshot_series_meta(dir);
  const std::string where = (dir / "meta.json").string() + ": ";
  const auto steps = static_cast<std::int64_t>(meta.records.size());
  if (steps + 1 != static_cast<std::int64_t>(boundaries.size()))
    throw IoError(where + "the series has " + std::to_string(steps) + " snapshots, the run " +
                  std::to_string(boundaries.size() - 1) + " (--snapshots / --snapshot-window)");
  if (!std::equal(boundaries.begin(), boundaries.end(), meta.boundaries.begin(),
                  meta.boundaries.end()))
    throw IoError(where +
                  "the series' snapshot spans differ from the run's (another dataset or "
                  "--snapshots / --snapshot-window)");
  if (meta.num_nodes != num_nodes)
    throw IoError(where + "the series has " + std::to_string(meta.num_nodes) +
                  " nodes, the dataset " + std::to_string(num_nodes));
  if (meta.config.num_parts != parts)
    throw IoError(where + "the series has " + std::to_string(meta.config.num_parts) +
                  " parts, the run " + std::to_string(parts) + " ranks (mpiexec -n)");
  const kernels::Resources host(kernels::Device::Cpu, 1);
  std::vector<std::vector<std::int32_t>> owner;
  std::vector<std::int32_t> part = partition::read_assignment(host, dir / "snapshot-0");
  for (std::int64_t t = 0; t < steps; ++t) {
    if (t > 0)
      part = partition::apply_migration(
          part, partition::read_migration_plan(dir / ("migration-" + std::to_string(t) + ".tsv")));
    owner.push_back(part);  // the nodes seen so far: a prefix of the ids
  }
  // A node not yet seen takes the part it is first placed in.
  std::vector<std::int32_t> first = owner.empty() ? std::vector<std::int32_t>{} : owner.back();
  if (static_cast<std::int64_t>(first.size()) != num_nodes)
    throw IoError(where + "the last snapshot holds " + std::to_string(first.size()) +
                  " nodes, the dataset " + std::to_string(num_nodes));
  for (std::int64_t t = steps - 1; t >= 0; --t) {
    std::vector<std::int32_t>& o = owner[static_cast<std::size_t>(t)];
    const std::size_t seen = o.size();
    for (std::size_t v = 0; v < seen; ++v) first[v] = o[v];
    o.insert(o.end(), first.begin() + static_cast<std::ptrdiff_t>(seen), first.end());
  }
  return owner;
}

namespace {

/// A held row: the node's out- and in-neighbours among the snapshot's directed pairs.
struct Row {
  std::vector<NodeId> out, in;
};

void insert_sorted(std::vector<NodeId>& v, NodeId x) {
  const auto it = std::lower_bound(v.begin(), v.end(), x);
  HALO_EXPECTS(it == v.end() || *it != x, "distribute_snapshots: an added pair is already held");
  v.insert(it, x);
}

void erase_sorted(std::vector<NodeId>& v, NodeId x) {
  const auto it = std::lower_bound(v.begin(), v.end(), x);
  HALO_EXPECTS(it != v.end() && *it == x, "distribute_snapshots: a removed pair is not held");
  v.erase(it);
}

constexpr std::int64_t kPairBytes = 2 * sizeof(NodeId);

/// The rows held as TemporalRows; sets bytes.resend_bytes.
template <class Mine>
TemporalRows held_rows(const std::map<NodeId, Row>& rows, const Mine& mine,
                       SnapshotTraffic& bytes) {
  TemporalRows tr;
  std::int64_t pairs = 0;
  for (const auto& [v, r] : rows) {
    HALO_EXPECTS(mine(v), "distribute_snapshots: a row of another rank is held");
    tr.owned.push_back(v);
    std::vector<NodeId> nb;
    std::set_union(r.out.begin(), r.out.end(), r.in.begin(), r.in.end(), std::back_inserter(nb));
    tr.neighbours.push_back(std::move(nb));
    pairs += static_cast<std::int64_t>(r.out.size());  // each pair once: at its source ...
    for (const NodeId u : r.in)
      if (!mine(u)) ++pairs;  // ... or at its destination when the source is remote
  }
  bytes.resend_bytes =
      pairs * kPairBytes + static_cast<std::int64_t>(tr.owned.size() * sizeof(std::int32_t));
  return tr;
}

}  // namespace

std::vector<TemporalRows> distribute_snapshots(std::span<const datasets::Snapshot> snapshots,
                                               const std::vector<std::vector<std::int32_t>>& owner,
                                               Comm& comm, std::vector<SnapshotTraffic>& traffic) {
  HALO_EXPECTS(owner.size() == snapshots.size(),
               "distribute_snapshots: one owner map per snapshot");
  const int me = comm.rank();
  const auto p = static_cast<std::size_t>(comm.size());
  std::map<NodeId, Row> rows;  // the rows this rank holds
  std::vector<TemporalRows> out;
  traffic.assign(snapshots.size(), {});
  for (std::size_t t = 0; t < snapshots.size(); ++t) {
    const std::vector<std::int32_t>& own = owner[t];
    const auto mine = [&](NodeId v) { return own[static_cast<std::size_t>(v)] == me; };
    SnapshotTraffic& bytes = traffic[t];
    for (std::size_t v = 0; v < own.size(); ++v)
      if (own[v] == me) rows.try_emplace(static_cast<NodeId>(v));
    if (t > 0) {
      const std::vector<std::int32_t>& before = owner[t - 1];
      // The rank takes its rows of snapshot t whole when that is cheaper than applying the
      // delta pairs that touch them to the rows it holds, with the rows migrating to it (id,
      // two counts and the neighbours at t - 1, 4 bytes each) counted against the delta.
      const datasets::SnapshotDelta delta =
          datasets::snapshot_delta(snapshots[t - 1], snapshots[t]);
      const auto touches = [&](const TemporalEdge& e) { return mine(e.src) || mine(e.dst); };
      const auto count = [&](const std::vector<TemporalEdge>& v) {
        return static_cast<std::int64_t>(std::count_if(v.begin(), v.end(), touches));
      };
      const std::int64_t changed = count(delta.removed) + count(delta.added);
      const std::int64_t whole = count(snapshots[t].edges);
      std::vector<std::int64_t> ends(own.size(), 0);  // pair ends per node at t - 1
      for (const TemporalEdge& e : snapshots[t - 1].edges)
        ++ends[static_cast<std::size_t>(e.src)], ++ends[static_cast<std::size_t>(e.dst)];
      std::int64_t incoming = 0;
      for (std::size_t v = 0; v < own.size(); ++v)
        if (own[v] == me && before[v] != me)
          incoming += static_cast<std::int64_t>(sizeof(NodeId)) * (3 + ends[v]);
      const bool take_whole = changed * kPairBytes + incoming > whole * kPairBytes;
      const std::vector<std::int64_t> whole_at =
          comm.alltoall(std::vector<std::int64_t>(p, take_whole ? 1 : 0));
      // Rows whose owner changes: [id, |out|, |in|, out..., in...] to the new owner, unless it
      // takes its rows whole.
      std::vector<std::vector<NodeId>> send(p);
      for (auto it = rows.begin(); it != rows.end();) {
        const NodeId v = it->first;
        const std::int32_t to = own[static_cast<std::size_t>(v)];
        if (before[static_cast<std::size_t>(v)] != me || to == me) {
          ++it;
          continue;
        }
        if (whole_at[static_cast<std::size_t>(to)] == 0) {
          std::vector<NodeId>& s = send[static_cast<std::size_t>(to)];
          s.push_back(v);
          s.push_back(static_cast<NodeId>(it->second.out.size()));
          s.push_back(static_cast<NodeId>(it->second.in.size()));
          s.insert(s.end(), it->second.out.begin(), it->second.out.end());
          s.insert(s.end(), it->second.in.begin(), it->second.in.end());
        }
        it = rows.erase(it);
      }
      std::vector<std::int64_t> offsets;
      const std::vector<NodeId> recv = alltoallv_lists(comm, send, offsets);
      bytes.migration_bytes = static_cast<std::int64_t>(recv.size() * sizeof(NodeId));
      for (std::size_t i = 0; i < recv.size();) {
        const NodeId v = recv[i];
        const auto n_out = static_cast<std::size_t>(recv[i + 1]);
        const auto n_in = static_cast<std::size_t>(recv[i + 2]);
        Row& r = rows[v];
        const auto* first = recv.data() + i + 3;
        r.out.assign(first, first + n_out);
        r.in.assign(first + n_out, first + n_out + n_in);
        i += 3 + n_out + n_in;
      }
      if (take_whole) {
        bytes.whole = true;
        bytes.delta_bytes = whole * kPairBytes;
        for (auto& [v, r] : rows) r.out.clear(), r.in.clear();
        for (const TemporalEdge& e : snapshots[t].edges) {
          if (mine(e.src)) rows[e.src].out.push_back(e.dst);  // sorted by (src, dst)
          if (mine(e.dst)) insert_sorted(rows[e.dst].in, e.src);
        }
        out.push_back(held_rows(rows, mine, bytes));
        continue;
      }
      for (const TemporalEdge& e : delta.removed) {
        if (!mine(e.src) && !mine(e.dst)) continue;
        bytes.delta_bytes += kPairBytes;
        if (mine(e.src)) erase_sorted(rows[e.src].out, e.dst);
        if (mine(e.dst)) erase_sorted(rows[e.dst].in, e.src);
      }
      for (const TemporalEdge& e : delta.added) {
        if (!mine(e.src) && !mine(e.dst)) continue;
        bytes.delta_bytes += kPairBytes;
        if (mine(e.src)) insert_sorted(rows[e.src].out, e.dst);
        if (mine(e.dst)) insert_sorted(rows[e.dst].in, e.src);
      }
    } else {
      for (const TemporalEdge& e : snapshots[0].edges) {
        if (!mine(e.src) && !mine(e.dst)) continue;
        bytes.delta_bytes += kPairBytes;
        if (mine(e.src)) rows[e.src].out.push_back(e.dst);  // sorted by (src, dst)
        if (mine(e.dst)) insert_sorted(rows[e.dst].in, e.src);
      }
    }
    out.push_back(held_rows(rows, mine, bytes));
  }
  return out;
}

TemporalStepPart temporal_step_part(const kernels::Resources& res, const TemporalRows& rows,
                                    std::span<const std::int32_t> owner, Comm& comm) {
  HALO_EXPECTS(res.device() == kernels::Device::Cpu, "temporal_step_part: builds host data");
  HALO_EXPECTS(rows.owned.size() == rows.neighbours.size(),
               "temporal_step_part: one neighbour list per owned row");
  const int me = comm.rank();
  const int p = comm.size();
  const auto n = static_cast<std::int64_t>(owner.size());
  // The partition ids of the step: contiguous per owner, ascending node id within one.
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(p) + 1, 0);
  for (const std::int32_t o : owner) {
    HALO_EXPECTS(o >= 0 && o < p, "temporal_step_part: an owner outside the ranks");
    ++offsets[static_cast<std::size_t>(o) + 1];
  }
  for (std::size_t k = 0; k < static_cast<std::size_t>(p); ++k) offsets[k + 1] += offsets[k];
  HALO_EXPECTS(offsets[static_cast<std::size_t>(me) + 1] - offsets[static_cast<std::size_t>(me)] ==
                   static_cast<std::int64_t>(rows.owned.size()),
               "temporal_step_part: the rows are not the ones `owner` gives this rank");
  std::vector<NodeId> pid(static_cast<std::size_t>(n));
  {
    std::vector<std::int64_t> next(offsets.begin(), offsets.end() - 1);
    for (std::int64_t v = 0; v < n; ++v)
      pid[static_cast<std::size_t>(v)] =
          static_cast<NodeId>(next[static_cast<std::size_t>(owner[static_cast<std::size_t>(v)])]++);
  }
  const auto owned = static_cast<std::int64_t>(rows.owned.size());
  // The halo, ascending partition id (by owner, then node id).
  std::vector<NodeId> halo;
  for (std::size_t r = 0; r < rows.owned.size(); ++r)
    for (const NodeId v : rows.neighbours[r])
      if (owner[static_cast<std::size_t>(v)] != me) halo.push_back(v);
  std::sort(halo.begin(), halo.end(), [&](NodeId a, NodeId b) {
    return pid[static_cast<std::size_t>(a)] < pid[static_cast<std::size_t>(b)];
  });
  halo.erase(std::unique(halo.begin(), halo.end()), halo.end());
  const auto local_of = [&](NodeId v) -> NodeId {
    if (owner[static_cast<std::size_t>(v)] == me)
      return static_cast<NodeId>(pid[static_cast<std::size_t>(v)] -
                                 offsets[static_cast<std::size_t>(me)]);
    const auto it = std::lower_bound(halo.begin(), halo.end(), v, [&](NodeId a, NodeId b) {
      return pid[static_cast<std::size_t>(a)] < pid[static_cast<std::size_t>(b)];
    });
    return static_cast<NodeId>(owned + (it - halo.begin()));
  };
  TemporalStepPart out;
  partition::Part& part = out.part;
  // The graph (owned rows, local columns ascending, no self-loops) and the owned rows' degrees.
  std::vector<std::int64_t> indptr{0};
  std::vector<NodeId> indices;
  std::vector<std::int64_t> degrees(static_cast<std::size_t>(owned + std::ssize(halo)));
  out.degree.resize(rows.owned.size());
  std::vector<std::vector<NodeId>> send(static_cast<std::size_t>(p));
  for (std::size_t r = 0; r < rows.owned.size(); ++r) {
    const NodeId u = rows.owned[r];
    HALO_EXPECTS(r == 0 || rows.owned[r - 1] < u, "temporal_step_part: owned rows not ascending");
    const std::size_t first = indices.size();
    std::vector<bool> to_peer(static_cast<std::size_t>(p), false);
    for (const NodeId v : rows.neighbours[r]) {
      if (v == u) continue;
      indices.push_back(local_of(v));
      const std::int32_t o = owner[static_cast<std::size_t>(v)];
      if (o != me) to_peer[static_cast<std::size_t>(o)] = true;
    }
    std::sort(indices.begin() + static_cast<std::ptrdiff_t>(first), indices.end());
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
    degrees[r] = static_cast<std::int64_t>(indices.size() - first);
    out.degree[r] = static_cast<std::int32_t>(std::min<std::int64_t>(
        static_cast<std::int64_t>(rows.neighbours[r].size()), datasets::kMaxDegreeBucket));
    for (int j = 0; j < p; ++j)
      if (to_peer[static_cast<std::size_t>(j)])
        send[static_cast<std::size_t>(j)].push_back(static_cast<NodeId>(r));
  }
  // The halo's degrees, from their owners: each sends its rows that neighbour this rank's, in
  // the order this rank's halo lists them (ascending id per owner).
  std::vector<std::vector<std::int64_t>> degree_lists(static_cast<std::size_t>(p));
  for (int j = 0; j < p; ++j)
    for (const NodeId r : send[static_cast<std::size_t>(j)])
      degree_lists[static_cast<std::size_t>(j)].push_back(degrees[static_cast<std::size_t>(r)]);
  std::vector<std::int64_t> recv_offsets;
  const std::vector<std::int64_t> halo_degrees = alltoallv_lists(comm, degree_lists, recv_offsets);
  HALO_EXPECTS(halo_degrees.size() == halo.size(),
               "temporal_step_part: the peers sent " + std::to_string(halo_degrees.size()) +
                   " halo degrees for " + std::to_string(halo.size()) +
                   " halo rows (the ranks' rows are not of one symmetric snapshot)");
  std::copy(halo_degrees.begin(), halo_degrees.end(), degrees.begin() + owned);
  out.degree_bytes = static_cast<std::int64_t>(halo_degrees.size() * sizeof(std::int64_t));
  // The receive lists: the halo grouped by owner.
  part.recv_offsets.assign(static_cast<std::size_t>(p) + 1, 0);
  for (const NodeId v : halo)
    ++part.recv_offsets[static_cast<std::size_t>(owner[static_cast<std::size_t>(v)]) + 1];
  for (std::size_t k = 0; k < static_cast<std::size_t>(p); ++k)
    part.recv_offsets[k + 1] += part.recv_offsets[k];
  for (std::size_t k = 0; k <= static_cast<std::size_t>(p); ++k)
    HALO_EXPECTS(part.recv_offsets[k] == recv_offsets[k],
                 "temporal_step_part: a peer's rows do not mirror this rank's halo");
  part.send_offsets.assign(1, 0);
  std::vector<NodeId> send_rows;
  for (int j = 0; j < p; ++j) {
    const auto& s = send[static_cast<std::size_t>(j)];
    send_rows.insert(send_rows.end(), s.begin(), s.end());
    part.send_offsets.push_back(static_cast<std::int64_t>(send_rows.size()));
  }
  const auto nnz = static_cast<std::int64_t>(indices.size());
  part.graph = datasets::Graph{kernels::Tensor<std::int64_t>::from_host(res, indptr),
                               kernels::Tensor<NodeId>::from_host(res, indices, nnz, 1),
                               kernels::Tensor<float>{}, owned + std::ssize(halo), false};
  part.degrees = kernels::Tensor<std::int64_t>::from_host(res, degrees);
  part.send_rows = kernels::Tensor<NodeId>::from_host(
      res, send_rows, static_cast<std::int64_t>(send_rows.size()), 1);
  std::vector<NodeId> original(rows.owned.begin(), rows.owned.end());
  original.insert(original.end(), halo.begin(), halo.end());
  std::vector<NodeId> halo_pid;
  for (const NodeId v : halo) halo_pid.push_back(pid[static_cast<std::size_t>(v)]);
  part.ids = partition::IdMap(partition::PartitionBook(offsets), me,
                              kernels::Tensor<NodeId>::from_host(
                                  res, original, static_cast<std::int64_t>(original.size()), 1),
                              kernels::Tensor<NodeId>::from_host(
                                  res, halo_pid, static_cast<std::int64_t>(halo_pid.size()), 1));
  return out;
}

}  // namespace halo::runtime
