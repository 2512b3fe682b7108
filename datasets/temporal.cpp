#include <algorithm>
#include <cctype>  // tolower
#include <limits>
#include <numeric>
#include <string>
#include <unordered_map>

#include <halo/datasets/detail/text.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/kernels/error.hpp>

namespace halo::datasets {
namespace {

namespace fs = std::filesystem;

/// The fields of a data line: comma-separated when it holds a comma (each field trimmed; an
/// empty field is kept, and later refused), else blank-separated. At most 5 are returned (a
/// longer line is refused anyway).
std::vector<std::string_view> fields_of(std::string_view line) {
  if (line.find(',') == std::string_view::npos) return detail::split_blanks(line, 4);
  std::vector<std::string_view> out;
  std::size_t begin = 0;
  while (out.size() < 5) {
    const std::size_t end = std::min(line.find(',', begin), line.size());
    out.push_back(detail::trim(line.substr(begin, end - begin)));
    if (end == line.size()) break;
    begin = end + 1;
  }
  return out;
}

/// Where each field of a layout is: (src, dst, time, weight or -1) and the field count.
struct Columns {
  int src = 0, dst = 1, time = 2, weight = -1;
  std::size_t count = 3;
};

Columns columns_of(TemporalLayout layout) {
  switch (layout) {
    case TemporalLayout::SrcDstTimeWeight:
      return {0, 1, 2, 3, 4};
    case TemporalLayout::SrcDstWeightTime:
      return {0, 1, 3, 2, 4};
    default:
      return {};
  }
}

const char* layout_text(TemporalLayout layout) {
  switch (layout) {
    case TemporalLayout::SrcDstTime:
      return "three integer fields \"src dst time\"";
    case TemporalLayout::SrcDstTimeWeight:
      return "four integer fields \"src dst time rating\"";
    case TemporalLayout::SrcDstWeightTime:
      return "four integer fields \"src,dst,rating,time\"";
    case TemporalLayout::Auto:
      break;
  }
  return "three (src dst time) or four (src dst time rating) integer fields";
}

/// The column a header word names: 0 src, 1 dst, 2 time, 3 rating; -1 for another word.
int column_of(std::string_view word) {
  std::string w(word);
  for (char& c : w) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* x : {"src", "source", "from", "u"})
    if (w == x) return 0;
  for (const char* x : {"dst", "target", "to", "v"})
    if (w == x) return 1;
  for (const char* x : {"t", "time", "timestamp", "ts", "unix_ts"})
    if (w == x) return 2;
  for (const char* x : {"rating", "weight", "sign", "w"})
    if (w == x) return 3;
  return -1;
}

/// The layout a header line names (src, dst and time each once, a rating optionally), or Auto
/// when the line is no such header.
TemporalLayout header_layout(std::string_view line) {
  while (!line.empty() && (line.front() == '#' || line.front() == '%')) line.remove_prefix(1);
  const auto f = fields_of(detail::trim(line));
  if (f.size() != 3 && f.size() != 4) return TemporalLayout::Auto;
  std::vector<int> c;
  for (const auto& word : f) c.push_back(column_of(word));
  if (c == std::vector<int>{0, 1, 2}) return TemporalLayout::SrcDstTime;
  if (c == std::vector<int>{0, 1, 2, 3}) return TemporalLayout::SrcDstTimeWeight;
  if (c == std::vector<int>{0, 1, 3, 2}) return TemporalLayout::SrcDstWeightTime;
  return TemporalLayout::Auto;
}

/// Sorted distinct pairs of events [begin, end).
std::vector<TemporalEdge> distinct_pairs(const TemporalGraph& g, std::int64_t begin,
                                         std::int64_t end) {
  std::vector<TemporalEdge> e;
  e.reserve(static_cast<std::size_t>(end - begin));
  for (std::int64_t i = begin; i < end; ++i)
    e.push_back({g.src[static_cast<std::size_t>(i)], g.dst[static_cast<std::size_t>(i)]});
  std::sort(e.begin(), e.end());
  e.erase(std::unique(e.begin(), e.end()), e.end());
  return e;
}

}  // namespace

TemporalLayout parse_temporal_layout(const std::string& columns) {
  if (columns == "auto") return TemporalLayout::Auto;
  const TemporalLayout l = header_layout(columns);
  if (l == TemporalLayout::Auto)
    throw LogicError("--columns " + columns +
                     ": expected src,dst,t or src,dst,t,rating or src,dst,rating,t (or auto)");
  return l;
}

TemporalGraph read_temporal_events(const fs::path& path, TemporalLayout layout) {
  const std::string text = detail::read_whole_file(path);
  const std::string where = path.string();
  using Raw = RawTemporalEvent;
  std::vector<Raw> raw;
  const bool explicit_layout = layout != TemporalLayout::Auto;
  bool header_seen = false;  // a header decides the layout only before the first event
  Columns col = columns_of(layout);
  std::size_t want = explicit_layout ? col.count : 0;
  std::int64_t first_line = 0;
  detail::TextLines lines(text);
  std::string_view line;
  while (lines.next(line)) {
    const std::string_view t = detail::trim(line);
    if (t.empty()) continue;
    const bool comment = t.front() == '#' || t.front() == '%';
    if (want == 0 && !header_seen) {
      // A comment or a line of words before the first event may name the columns (an event
      // line names none: numbers are no column names).
      if (const TemporalLayout h = header_layout(t); h != TemporalLayout::Auto) {
        layout = h;
        col = columns_of(h);
        want = col.count;
        header_seen = true;
        first_line = lines.number();
        continue;
      }
    }
    if (comment) continue;
    const auto f = fields_of(t);
    if (want == 0 && (f.size() == 3 || f.size() == 4)) {
      want = f.size();
      col = columns_of(want == 3 ? TemporalLayout::SrcDstTime : TemporalLayout::SrcDstTimeWeight);
      first_line = lines.number();
    }
    Raw r{0, 0, 0, 0};
    const bool ok = f.size() == want && detail::parse_int(f[col.src], r.src) &&
                    detail::parse_int(f[col.dst], r.dst) &&
                    detail::parse_int(f[col.time], r.time) &&
                    (col.weight < 0 || detail::parse_int(f[col.weight], r.weight));
    if (!ok) {
      std::string what = layout_text(
          layout == TemporalLayout::Auto && want != 0
              ? (want == 3 ? TemporalLayout::SrcDstTime : TemporalLayout::SrcDstTimeWeight)
              : layout);
      if (first_line > 0)
        what += std::string(header_seen ? " (as the header on line " : " (as on line ") +
                std::to_string(first_line) + " says)";
      detail::fail_expected(where, lines.number(), what, line);
    }
    if (r.src < 0 || r.dst < 0)
      detail::fail_expected(where, lines.number(), "non-negative node ids", line);
    raw.push_back(r);
  }
  // A time column must be able to be time: a handful of values repeated over thousands of
  // events is what a rating or sign column looks like (read in the wrong order, every event
  // falls into a few snapshots and training learns nothing). A layout the caller named is
  // trusted (time may be a coarse step index there).
  constexpr std::size_t kEvents = 1000, kDistinct = 32;
  if (!explicit_layout && raw.size() >= kEvents) {
    std::vector<std::int64_t> times;
    for (const Raw& r : raw) {
      if (std::find(times.begin(), times.end(), r.time) == times.end()) times.push_back(r.time);
      if (times.size() > kDistinct) break;
    }
    if (times.size() <= kDistinct) {
      const auto [lo, hi] = std::minmax_element(times.begin(), times.end());
      throw IoError(where + ": the time column (field " + std::to_string(col.time + 1) +
                    ") holds only " + std::to_string(times.size()) + " distinct values (" +
                    std::to_string(*lo) + ".." + std::to_string(*hi) + ") over " +
                    std::to_string(raw.size()) +
                    " events, which is no time (ratings look like this); name the columns "
                    "with a header line such as '# src dst rating time' or --columns "
                    "src,dst,rating,t");
    }
  }
  TemporalGraph g = make_temporal_graph(std::move(raw), col.weight >= 0, where);
  g.name = path.parent_path().filename().string();
  return g;
}

TemporalGraph make_temporal_graph(std::vector<RawTemporalEvent> raw, bool weighted,
                                  const std::string& where) {
  std::stable_sort(
      raw.begin(), raw.end(),
      [](const RawTemporalEvent& a, const RawTemporalEvent& b) { return a.time < b.time; });
  TemporalGraph g;
  const std::size_t m = raw.size();
  g.src.resize(m);
  g.dst.resize(m);
  g.time.resize(m);
  if (weighted) g.weight.resize(m);
  std::unordered_map<std::int64_t, NodeId> dense;
  dense.reserve(m);
  auto id_of = [&](std::int64_t original) {
    if (original < 0) throw IoError(where + ": negative node id " + std::to_string(original));
    const auto [it, fresh] = dense.try_emplace(original, static_cast<NodeId>(dense.size()));
    if (fresh) {
      if (g.original_ids.size() >= static_cast<std::size_t>(std::numeric_limits<NodeId>::max()))
        throw IoError(where + ": more than 2^31 - 1 distinct node ids");
      g.original_ids.push_back(original);
    }
    return it->second;
  };
  for (std::size_t e = 0; e < m; ++e) {
    g.src[e] = id_of(raw[e].src);
    g.dst[e] = id_of(raw[e].dst);
    g.time[e] = raw[e].time;
    if (weighted) g.weight[e] = raw[e].weight;
  }
  return g;
}

std::vector<std::int64_t> snapshot_boundaries(const TemporalGraph& g,
                                              const SnapshotConfig& config) {
  HALO_EXPECTS((config.num_snapshots > 0) != (config.window_seconds > 0),
               "snapshots: give exactly one of --snapshots N and --snapshot-window SECONDS");
  HALO_EXPECTS(config.window_snapshots >= 0,
               "snapshots: --window-snapshots must be >= 0 (0: cumulative)");
  const std::int64_t t_min = g.num_events() > 0 ? g.time.front() : 0;
  // D = t_max - t_min + 1 in 128 bits: int64 times may span more than int64 holds.
  const __int128 d = g.num_events() > 0 ? __int128{g.time.back()} - t_min + 1 : 0;
  HALO_EXPECTS(d <= std::numeric_limits<std::int64_t>::max() &&
                   t_min + d <= std::numeric_limits<std::int64_t>::max(),
               "snapshots: the event times span more than 2^63 - 1 seconds, or reach 2^63 - 1");
  std::vector<std::int64_t> b;
  if (config.num_snapshots > 0) {
    const std::int64_t n = config.num_snapshots;
    HALO_EXPECTS(n <= (std::int64_t{1} << 24), "snapshots: at most 2^24 snapshots");
    for (std::int64_t i = 0; i <= n; ++i) b.push_back(static_cast<std::int64_t>(t_min + i * d / n));
    return b;
  }
  const std::int64_t s = config.window_seconds;
  const auto n = static_cast<std::int64_t>(std::max<__int128>(1, (d + s - 1) / s));
  HALO_EXPECTS(n <= (std::int64_t{1} << 24), "snapshots: --snapshot-window " + std::to_string(s) +
                                                 " gives " + std::to_string(n) +
                                                 " snapshots, more than 2^24");
  for (std::int64_t i = 0; i < n; ++i)
    b.push_back(static_cast<std::int64_t>(t_min + __int128{i} * s));
  b.push_back(static_cast<std::int64_t>(t_min + d));
  return b;
}

std::vector<Snapshot> make_snapshots(const TemporalGraph& g, const SnapshotConfig& config) {
  const std::vector<std::int64_t> b = snapshot_boundaries(g, config);
  const auto n = static_cast<std::int64_t>(b.size()) - 1;
  // first[i]: the first event at or after b_i. Events are sorted by time.
  std::vector<std::int64_t> first(b.size());
  for (std::size_t i = 0; i < b.size(); ++i)
    first[i] = std::lower_bound(g.time.begin(), g.time.end(), b[i]) - g.time.begin();
  first.back() = g.num_events();
  // seen[e]: the nodes seen in events [0, e). Ids are given in order of first appearance, so
  // that is one more than the largest id among them.
  std::vector<std::int64_t> seen(static_cast<std::size_t>(g.num_events()) + 1, 0);
  for (std::size_t k = 0; k < g.time.size(); ++k)
    seen[k + 1] =
        std::max<std::int64_t>({seen[k], std::int64_t{g.src[k]} + 1, std::int64_t{g.dst[k]} + 1});
  std::vector<Snapshot> out(static_cast<std::size_t>(n));
  const std::int64_t w = config.window_snapshots;
  for (std::int64_t i = 0; i < n; ++i) {
    Snapshot& s = out[static_cast<std::size_t>(i)];
    const std::int64_t lo = w == 0 ? 0 : std::max<std::int64_t>(0, i - w + 1);
    s.time_begin = b[static_cast<std::size_t>(lo)];
    s.time_end = b[static_cast<std::size_t>(i) + 1];
    s.num_nodes = seen[static_cast<std::size_t>(first[static_cast<std::size_t>(i) + 1])];
    std::vector<TemporalEdge> span = distinct_pairs(g, first[static_cast<std::size_t>(i)],
                                                    first[static_cast<std::size_t>(i) + 1]);
    if (w == 0 && i > 0) {
      // Cumulative: the previous snapshot's pairs merged with this span's.
      const auto& prev = out[static_cast<std::size_t>(i) - 1].edges;
      s.edges.reserve(prev.size() + span.size());
      std::set_union(prev.begin(), prev.end(), span.begin(), span.end(),
                     std::back_inserter(s.edges));
    } else if (w <= 1) {
      s.edges = std::move(span);
    } else {
      s.edges = distinct_pairs(g, first[static_cast<std::size_t>(lo)],
                               first[static_cast<std::size_t>(i) + 1]);
    }
  }
  return out;
}

SnapshotDelta snapshot_delta(const Snapshot& from, const Snapshot& to) {
  HALO_EXPECTS(to.num_nodes >= from.num_nodes,
               "snapshot_delta: nodes never leave a snapshot series (" +
                   std::to_string(from.num_nodes) + " -> " + std::to_string(to.num_nodes) + ")");
  SnapshotDelta d;
  d.time_begin = to.time_begin;
  d.time_end = to.time_end;
  d.num_nodes_before = from.num_nodes;
  d.num_nodes_after = to.num_nodes;
  std::set_difference(to.edges.begin(), to.edges.end(), from.edges.begin(), from.edges.end(),
                      std::back_inserter(d.added));
  std::set_difference(from.edges.begin(), from.edges.end(), to.edges.begin(), to.edges.end(),
                      std::back_inserter(d.removed));
  return d;
}

Snapshot apply_delta(const Snapshot& from, const SnapshotDelta& delta) {
  HALO_EXPECTS(
      delta.num_nodes_before == from.num_nodes && delta.num_nodes_after >= delta.num_nodes_before,
      "apply_delta: the delta starts from " + std::to_string(delta.num_nodes_before) +
          " nodes, the snapshot has " + std::to_string(from.num_nodes));
  Snapshot s;
  s.time_begin = delta.time_begin;
  s.time_end = delta.time_end;
  s.num_nodes = delta.num_nodes_after;
  std::vector<TemporalEdge> kept;
  kept.reserve(from.edges.size());
  std::set_difference(from.edges.begin(), from.edges.end(), delta.removed.begin(),
                      delta.removed.end(), std::back_inserter(kept));
  HALO_EXPECTS(kept.size() + delta.removed.size() == from.edges.size(),
               "apply_delta: a removed edge is not in the snapshot");
  s.edges.reserve(kept.size() + delta.added.size());
  std::set_union(kept.begin(), kept.end(), delta.added.begin(), delta.added.end(),
                 std::back_inserter(s.edges));
  HALO_EXPECTS(s.edges.size() == kept.size() + delta.added.size(),
               "apply_delta: an added edge is already in the snapshot");
  for (const TemporalEdge& e : delta.added)
    HALO_EXPECTS(e.src >= 0 && e.dst >= 0 && e.src < s.num_nodes && e.dst < s.num_nodes,
                 "apply_delta: an added edge names a node outside the snapshot");
  return s;
}

Graph snapshot_graph(const kernels::Resources& res, const Snapshot& s) {
  std::vector<std::pair<NodeId, NodeId>> e;
  e.reserve(s.edges.size());
  for (const TemporalEdge& x : s.edges) e.emplace_back(x.src, x.dst);
  return graph_from_edges(res, s.num_nodes, e);
}

Graph aggregate_graph(const kernels::Resources& res, const TemporalGraph& g) {
  std::vector<std::pair<NodeId, NodeId>> e(static_cast<std::size_t>(g.num_events()));
  for (std::size_t i = 0; i < e.size(); ++i) e[i] = {g.src[i], g.dst[i]};
  return deduplicate(res, graph_from_edges(res, g.num_nodes(), e));
}

}  // namespace halo::datasets
