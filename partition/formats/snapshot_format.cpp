#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include <halo/datasets/readers/staged_directory.hpp>
#include <halo/kernels/error.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/partition/formats/snapshot_format.hpp>

namespace halo::partition {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void write_text_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !(out << text) || !out.flush()) throw IoError(path.string() + ": cannot write");
}

std::string plan_text(const MigrationPlan& p) {
  std::string s = "halo-migration 1 " + std::to_string(p.num_nodes_before) + " " +
                  std::to_string(p.num_nodes_after) + "\n";
  for (std::size_t i = 0; i < p.moved.size(); ++i)
    s += std::to_string(p.moved[i]) + "\t" + std::to_string(p.from[i]) + "\t" +
         std::to_string(p.to[i]) + "\n";
  for (std::size_t i = 0; i < p.placed.size(); ++i)
    s += std::to_string(p.num_nodes_before + static_cast<std::int64_t>(i)) + "\t-1\t" +
         std::to_string(p.placed[i]) + "\n";
  return s;
}

json record_json(const SnapshotRecord& r) {
  return {{"index", r.index},
          {"time_begin", r.time_begin},
          {"time_end", r.time_end},
          {"num_nodes", r.num_nodes},
          {"num_pairs", r.num_pairs},
          {"pairs_added", r.pairs_added},
          {"pairs_removed", r.pairs_removed},
          {"new_nodes", r.new_nodes},
          {"migrated", r.migrated},
          {"from_scratch", r.from_scratch},
          {"edge_cut", r.edge_cut},
          {"comm_volume", r.comm_volume},
          {"max_halo", r.max_halo},
          {"balance", r.balance},
          {"seconds", r.seconds},
          {"partition", "snapshot-" + std::to_string(r.index)},
          {"migration",
           r.index == 0 ? json(nullptr) : json("migration-" + std::to_string(r.index) + ".tsv")}};
}

}  // namespace

std::vector<SnapshotRecord> partition_snapshots(const kernels::Resources& res,
                                                const datasets::TemporalGraph& g,
                                                const datasets::SnapshotConfig& snapshots,
                                                const RepartitionConfig& config,
                                                const SnapshotVisitor& visit) {
  const std::vector<datasets::Snapshot> series = datasets::make_snapshots(g, snapshots);
  std::vector<SnapshotRecord> records;
  std::vector<std::int32_t> previous;
  for (std::size_t t = 0; t < series.size(); ++t) {
    const datasets::Snapshot& snap = series[t];
    datasets::Dataset ds = datasets::graph_only_dataset(res, datasets::snapshot_graph(res, snap));
    ds.name = g.name + "@" + std::to_string(t);
    PartitionResult r;
    r.config.num_parts = config.num_parts;
    r.config.method = Method::MetisKway;
    r.config.objective = config.objective;
    r.config.balance = {true, false, false};
    r.config.imbalance = config.imbalance;
    r.config.seed = config.seed;
    r.symmetric = partitioning_graph(res, ds.graph);
    SnapshotPartition s =
        repartition_snapshot(res, ds, r.symmetric, previous, static_cast<std::int64_t>(t), config);
    SnapshotRecord rec;
    rec.index = static_cast<std::int64_t>(t);
    rec.time_begin = snap.time_begin;
    rec.time_end = snap.time_end;
    rec.num_nodes = snap.num_nodes;
    rec.num_pairs = static_cast<std::int64_t>(snap.edges.size());
    if (t == 0) {
      rec.pairs_added = rec.num_pairs;
    } else {
      const datasets::SnapshotDelta d = datasets::snapshot_delta(series[t - 1], snap);
      rec.pairs_added = static_cast<std::int64_t>(d.added.size());
      rec.pairs_removed = static_cast<std::int64_t>(d.removed.size());
    }
    rec.new_nodes = s.new_nodes;
    rec.migrated = s.migrated;
    rec.from_scratch = s.from_scratch;
    rec.edge_cut = s.metrics.edge_cut;
    rec.comm_volume = s.metrics.comm_volume;
    rec.max_halo = s.metrics.max_halo;
    rec.balance = s.metrics.nodes.balance;
    rec.seconds = s.seconds;
    r.assignment.part = std::move(s.part);
    r.relabelling = relabel(r.assignment.part, config.num_parts);
    r.metrics = std::move(s.metrics);
    r.timings.assign_s = rec.seconds;
    r.timings.total_s = rec.seconds;
    if (visit) visit(rec.index, snap, ds, r, rec);
    previous = std::move(r.assignment.part);
    records.push_back(rec);
  }
  return records;
}

std::vector<SnapshotRecord> write_snapshot_partitions(const kernels::Resources& res,
                                                      const datasets::TemporalGraph& g,
                                                      const datasets::SnapshotConfig& snapshots,
                                                      const RepartitionConfig& config,
                                                      const fs::path& dir,
                                                      const Progress& progress) {
  std::vector<SnapshotRecord> records;
  datasets::write_staged_directory(dir, [&](const fs::path& tmp) {
    std::vector<std::int32_t> previous;
    records = partition_snapshots(
        res, g, snapshots, config,
        [&](std::int64_t t, const datasets::Snapshot&, const datasets::Dataset& ds,
            const PartitionResult& r, const SnapshotRecord& rec) {
          write_partitions(res, ds, r, tmp / ("snapshot-" + std::to_string(t)));
          if (t > 0)
            write_text_file(tmp / ("migration-" + std::to_string(t) + ".tsv"),
                            plan_text(migration_plan(previous, r.assignment.part)));
          previous = r.assignment.part;
          if (progress)
            progress("snapshot " + std::to_string(t) + ": " + std::to_string(rec.num_nodes) +
                     " nodes, " + std::to_string(rec.num_pairs) + " pairs, cut " +
                     std::to_string(rec.edge_cut) + ", migrated " + std::to_string(rec.migrated));
        });
    std::string ids;
    for (std::int64_t id : g.original_ids) ids += std::to_string(id) + "\n";
    write_text_file(tmp / "node_ids.txt", ids);

    const std::vector<std::int64_t> b = datasets::snapshot_boundaries(g, snapshots);
    json j;
    j["format"] = "halo-snapshot-partitions";
    j["format_version"] = kSnapshotSeriesVersion;
    j["dataset"] = {{"name", g.name},
                    {"num_nodes", g.num_nodes()},
                    {"num_events", g.num_events()},
                    {"time_min", g.num_events() > 0 ? g.time.front() : 0},
                    {"time_max", g.num_events() > 0 ? g.time.back() : 0},
                    {"weighted", !g.weight.empty()}};
    j["snapshots_config"] = {{"num_snapshots", static_cast<std::int64_t>(b.size()) - 1},
                             {"window_seconds", snapshots.window_seconds},
                             {"window_snapshots", snapshots.window_snapshots},
                             {"boundaries", b}};
    j["num_parts"] = config.num_parts;
    j["method"] = std::string(to_string(config.method));
    j["objective"] = std::string(to_string(config.objective));
    j["imbalance"] = config.imbalance;
    j["seed"] = config.seed;
    j["migration_weight"] = config.migration_weight;
    j["repartition_every"] = config.repartition_every;
    json list = json::array();
    std::int64_t migrated = 0, volume = 0, delta_pairs = 0, pairs = 0;
    for (const SnapshotRecord& r : records) {
      list.push_back(record_json(r));
      migrated += r.migrated;
      volume += r.comm_volume;
      delta_pairs += r.pairs_added + r.pairs_removed;
      pairs += r.num_pairs;
    }
    j["snapshots"] = std::move(list);
    j["totals"] = {{"migrated", migrated},
                   {"comm_volume", volume},
                   {"delta_pairs", delta_pairs},
                   {"snapshot_pairs", pairs}};
    write_text_file(tmp / "meta.json", j.dump(1) + "\n");
  });
  return records;
}

MigrationPlan read_migration_plan(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw IoError(file.string() + ": cannot open");
  const std::string where = file.string();
  MigrationPlan p;
  int version = 0;
  long long before = -1, after = -1;
  std::string line;
  if (!std::getline(in, line) ||
      std::sscanf(line.c_str(), "halo-migration %d %lld %lld", &version, &before, &after) != 3 ||
      version != 1 || before < 0 || after < before)
    throw IoError(where + ":1: expected \"halo-migration 1 <nodes before> <nodes after>\"");
  p.num_nodes_before = before;
  p.num_nodes_after = after;
  std::int64_t number = 1;
  while (std::getline(in, line)) {
    ++number;
    long long v = 0, from = 0, to = 0;
    char extra = 0;
    if (std::sscanf(line.c_str(), "%lld\t%lld\t%lld%c", &v, &from, &to, &extra) != 3 || to < 0 ||
        v < 0 || v >= p.num_nodes_after)
      throw IoError(where + ":" + std::to_string(number) + ": expected \"node from to\", got \"" +
                    line + "\"");
    if (from < 0) {
      if (v != p.num_nodes_before + static_cast<std::int64_t>(p.placed.size()))
        throw IoError(where + ":" + std::to_string(number) +
                      ": new nodes must follow in id order from " +
                      std::to_string(p.num_nodes_before));
      p.placed.push_back(static_cast<std::int32_t>(to));
    } else {
      if (v >= p.num_nodes_before || !p.placed.empty() || (!p.moved.empty() && v <= p.moved.back()))
        throw IoError(where + ":" + std::to_string(number) +
                      ": moved nodes must be old nodes, ascending, before the new ones");
      p.moved.push_back(static_cast<NodeId>(v));
      p.from.push_back(static_cast<std::int32_t>(from));
      p.to.push_back(static_cast<std::int32_t>(to));
    }
  }
  if (static_cast<std::int64_t>(p.placed.size()) != p.num_nodes_after - p.num_nodes_before)
    throw IoError(where + ": lists " + std::to_string(p.placed.size()) + " new nodes, the header " +
                  std::to_string(p.num_nodes_after - p.num_nodes_before));
  return p;
}

std::vector<std::int32_t> read_assignment(const kernels::Resources& res, const fs::path& dir) {
  const PartitionMeta meta = read_partition_meta(dir);
  std::vector<std::int32_t> part(static_cast<std::size_t>(meta.num_nodes), -1);
  for (std::int32_t k = 0; k < meta.config.num_parts; ++k) {
    const Part p = read_part(res, dir, k, &meta);
    for (std::int64_t i = 0; i < p.num_owned(); ++i)
      part[static_cast<std::size_t>(p.ids.to_original(i))] = k;
  }
  return part;
}

bool is_snapshot_series(const fs::path& dir) {
  std::ifstream in(dir / "meta.json");
  if (!in) return false;
  const json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.value("format", std::string()) == "halo-snapshot-partitions";
}

SnapshotSeriesMeta read_snapshot_series_meta(const fs::path& dir) {
  const fs::path file = dir / "meta.json";
  std::ifstream in(file);
  if (!in) throw IoError(file.string() + ": missing (not a snapshot partition series?)");
  SnapshotSeriesMeta m;
  try {
    const json j = json::parse(in);
    if (j.value("format", std::string()) != "halo-snapshot-partitions")
      throw IoError(file.string() + ": format is not \"halo-snapshot-partitions\"");
    if (j.at("format_version").get<std::int32_t>() != kSnapshotSeriesVersion)
      throw IoError(file.string() + ": format_version " + j.at("format_version").dump() +
                    " is not supported (this build reads version " +
                    std::to_string(kSnapshotSeriesVersion) + ")");
    const json& d = j.at("dataset");
    m.dataset = d.at("name").get<std::string>();
    m.num_nodes = d.at("num_nodes").get<std::int64_t>();
    m.num_events = d.at("num_events").get<std::int64_t>();
    const json& sc = j.at("snapshots_config");
    m.boundaries = sc.at("boundaries").get<std::vector<std::int64_t>>();
    m.snapshots.window_seconds = sc.at("window_seconds").get<std::int64_t>();
    m.snapshots.num_snapshots =
        m.snapshots.window_seconds > 0 ? 0 : sc.at("num_snapshots").get<std::int64_t>();
    m.snapshots.window_snapshots = sc.at("window_snapshots").get<std::int64_t>();
    m.config.num_parts = j.at("num_parts").get<std::int32_t>();
    m.config.method = parse_repartition_method(j.at("method").get<std::string>());
    m.config.objective = parse_objective(j.at("objective").get<std::string>());
    m.config.imbalance = j.at("imbalance").get<double>();
    m.config.seed = j.at("seed").get<std::uint64_t>();
    m.config.migration_weight = j.at("migration_weight").get<double>();
    m.config.repartition_every = j.at("repartition_every").get<std::int64_t>();
    for (const json& r : j.at("snapshots")) {
      SnapshotRecord x;
      x.index = r.at("index").get<std::int64_t>();
      x.time_begin = r.at("time_begin").get<std::int64_t>();
      x.time_end = r.at("time_end").get<std::int64_t>();
      x.num_nodes = r.at("num_nodes").get<std::int64_t>();
      x.num_pairs = r.at("num_pairs").get<std::int64_t>();
      x.pairs_added = r.at("pairs_added").get<std::int64_t>();
      x.pairs_removed = r.at("pairs_removed").get<std::int64_t>();
      x.new_nodes = r.at("new_nodes").get<std::int64_t>();
      x.migrated = r.at("migrated").get<std::int64_t>();
      x.from_scratch = r.at("from_scratch").get<bool>();
      x.edge_cut = r.at("edge_cut").get<std::int64_t>();
      x.comm_volume = r.at("comm_volume").get<std::int64_t>();
      x.max_halo = r.at("max_halo").get<std::int64_t>();
      x.balance = r.at("balance").get<double>();
      x.seconds = r.at("seconds").get<double>();
      if (x.index != static_cast<std::int64_t>(m.records.size()))
        throw IoError(file.string() + ": snapshot " + std::to_string(m.records.size()) +
                      " has index " + std::to_string(x.index));
      m.records.push_back(x);
    }
  } catch (const json::exception& e) {
    throw IoError(file.string() + ": malformed (" + e.what() + ")");
  } catch (const LogicError& e) {
    throw IoError(file.string() + ": " + e.what());
  }
  if (m.boundaries.size() != m.records.size() + 1)
    throw IoError(file.string() + ": " + std::to_string(m.boundaries.size()) + " boundaries for " +
                  std::to_string(m.records.size()) + " snapshots");
  return m;
}

std::int64_t verify_snapshot_partitions(const kernels::Resources& res, const fs::path& dir) {
  const SnapshotSeriesMeta m = read_snapshot_series_meta(dir);
  std::vector<std::int32_t> previous;
  for (const SnapshotRecord& r : m.records) {
    const fs::path snap = dir / ("snapshot-" + std::to_string(r.index));
    verify_partitions(snap);
    std::vector<std::int32_t> part = read_assignment(res, snap);
    if (static_cast<std::int64_t>(part.size()) != r.num_nodes)
      throw IoError(snap.string() + ": holds " + std::to_string(part.size()) +
                    " nodes, meta.json gives " + std::to_string(r.num_nodes));
    if (r.index > 0) {
      const fs::path plan_file = dir / ("migration-" + std::to_string(r.index) + ".tsv");
      std::vector<std::int32_t> replayed;
      try {
        replayed = apply_migration(previous, read_migration_plan(plan_file));
      } catch (const LogicError& e) {
        throw IoError(plan_file.string() + ": does not apply to snapshot " +
                      std::to_string(r.index - 1) + " (" + e.what() + ")");
      }
      if (replayed != part)
        throw IoError(plan_file.string() + ": does not turn snapshot " +
                      std::to_string(r.index - 1) + "'s assignment into snapshot " +
                      std::to_string(r.index) + "'s");
    }
    previous = std::move(part);
  }
  return static_cast<std::int64_t>(m.records.size());
}

}  // namespace halo::partition
