// `halo datasets export --snapshots N`: the link task's data of a small temporal fixture, checked
// by numpy against the definitions of docs/dynamic.md computed from the events file itself.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>

#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;
using Outcome = halo::testing::CommandOutcome;

// argv: export.npz events.tsv T window_snapshots window train_fraction val_fraction. Recomputes
// every array from the events (ids renumbered in time order, spans, the symmetric snapshot, the
// GCN matrix, the capped degrees, the targets) and compares.
const char* const kCheck = R"PY(
import json, sys
import numpy as np
path, events = sys.argv[1], sys.argv[2]
T, ws, W = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
tf, vf = float(sys.argv[6]), float(sys.argv[7])
d = np.load(path)
meta = json.loads(bytes(d['meta_json']).decode())
assert meta['format'] == 'halo-temporal-link', meta
assert sorted(meta['keys']) == sorted(d.files), (sorted(meta['keys']), sorted(d.files))
ev = [tuple(int(x) for x in line.split()) for line in open(events) if line.strip()]
ev = sorted(ev, key=lambda e: e[2])  # stable: ties keep the file order
ids = {}
for s, t, _ in ev:
    for v in (s, t):
        ids.setdefault(v, len(ids))
n = len(ids)
assert int(d['num_nodes']) == n and int(d['num_events']) == len(ev) and int(d['num_steps']) == T
lo, hi = ev[0][2], ev[-1][2]
D = hi - lo + 1
b = [lo + (i * D) // T for i in range(T + 1)]
assert list(d['boundaries']) == b, (list(d['boundaries']), b)
span = lambda t: {(ids[s], ids[u]) for s, u, x in ev if b[t] <= x < b[t + 1]}
train_end = int(round(tf * T)); val_end = train_end + int(round(vf * T))
assert (int(d['window']), int(d['train_begin']), int(d['train_end']), int(d['val_end']),
        int(d['test_end'])) == (W, W, train_end, val_end, T)
read = max(1, train_end - 1)
deg = np.zeros((T, n), np.int64)
for t in range(T):
    first = 0 if ws == 0 else max(0, t - ws + 1)
    pairs = set().union(*[span(k) for k in range(first, t + 1)])
    nb = [set() for _ in range(n)]
    for s, u in pairs:
        nb[s].add(u); nb[u].add(s)
    deg[t] = [len(x) for x in nb]  # a self-loop counts as a neighbour
    # The GCN matrix: D^-1/2 (A + I) D^-1/2, A without self-loops.
    g0, g1 = d['gcn_offsets'][t], d['gcn_offsets'][t + 1]
    rows, cols, w = d['gcn_row'][g0:g1], d['gcn_col'][g0:g1], d['gcn_weight'][g0:g1]
    dh = np.array([len(x - {v}) + 1 for v, x in enumerate(nb)], np.float64)
    want = sorted((v, u) for v in range(n) for u in (nb[v] - {v}) | {v})
    assert list(zip(rows.tolist(), cols.tolist())) == want, ('gcn structure', t)
    ref = np.array([1 / np.sqrt(dh[v] * dh[u]) for v, u in want])
    assert np.allclose(w, ref, rtol=1e-6, atol=0), ('gcn weights', t)
    e0, e1 = d['edge_offsets'][t], d['edge_offsets'][t + 1]
    edges = list(zip(d['edge_dst'][e0:e1].tolist(), d['edge_src'][e0:e1].tolist()))
    assert edges == [p for p in want if p[0] != p[1]], ('edges', t)
    a0, a1 = d['active_offsets'][t], d['active_offsets'][t + 1]
    assert d['active'][a0:a1].tolist() == [v for v in range(n) if nb[v]], ('active', t)
    t0, t1 = d['target_offsets'][t], d['target_offsets'][t + 1]
    tg = sorted({p for s, u in span(t) if s != u for p in ((s, u), (u, s))})
    assert list(zip(d['target_src'][t0:t1].tolist(), d['target_dst'][t0:t1].tolist())) == tg, t
cap = min(int(deg[:read].max()), 255)
assert int(d['num_features']) == cap + 1
assert d['feature'].shape == (T, n) and np.array_equal(d['feature'], np.minimum(deg, cap))
print('ok', n, 'nodes', T, 'steps', int(d['num_features']), 'features',
      int(d['target_offsets'][-1]), 'targets', int(d['edge_offsets'][-1]), 'edges')
)PY";

class ExportTemporalCli : public ::testing::Test {
 protected:
  Outcome run(const std::string& args) const {
    return halo::testing::run_command(std::string(HALO_TEST_BINARY) + " " + args, m_dir);
  }
  /// A temporal directory of 14 nodes with non-contiguous ids and 300 events over 1000
  /// seconds: repeats, reciprocal pairs and a self-loop; returns the directory.
  fs::path fixture() const {
    const fs::path d = m_dir / "events";
    fs::create_directories(d);
    std::ofstream f(d / "events.tsv");
    unsigned x = 12345;
    const auto next = [&x] { return (x = x * 1103515245u + 12345u) >> 16; };
    for (int i = 0; i < 300; ++i) {
      const unsigned u = next() % 14, v = next() % 13;
      f << 100 + 7 * u << '\t' << 100 + 7 * (v >= u ? v + 1 : v) << '\t' << next() % 1000 << '\n';
    }
    f << 107 << '\t' << 107 << '\t' << 455 << '\n';  // a self-loop event
    return d;
  }
  Outcome check(const fs::path& npz, const std::string& args) const {
    const fs::path script = m_dir / "check.py";
    std::ofstream(script) << kCheck;
    return halo::testing::run_command("/usr/bin/python3 " + script.string() + " " + npz.string() +
                                          " " + (fixture() / "events.tsv").string() + " " + args,
                                      m_dir);
  }
  const halo::testing::TempDir m_temp;
  const fs::path m_dir = m_temp.path();
};

TEST_F(ExportTemporalCli, WritesWhatTheLinkTaskTrainsOn) {
  const fs::path data = fixture(), out = m_dir / "t.npz";
  // Each step's own events (halo train --task link's default).
  Outcome r = run("datasets export --dataset " + data.string() +
                  " --snapshots 10 --window 2 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("10 snapshots (7 / 1 / 2 train / val / test steps, window 2)"),
            std::string::npos)
      << r.out;
  r = check(out, "10 1 2 0.7 0.1");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("ok 14 nodes 10 steps"), std::string::npos) << r.out;
  // A sliding window of 3 spans and another split: the snapshots and the cap change, the
  // targets stay each step's own span.
  r = run("datasets export --dataset " + data.string() +
          " --snapshots 12 --window-snapshots 3 --window 3 --link-split 0.6,0.2 --out " +
          out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = check(out, "12 3 3 0.6 0.2");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  // Cumulative snapshots.
  r = run("datasets export --dataset " + data.string() + " --snapshots 10 --window-snapshots 0 " +
          "--window 2 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = check(out, "10 0 2 0.7 0.1");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
}

TEST_F(ExportTemporalCli, RefusesWhatItCannotExport) {
  const std::string data = " --dataset " + fixture().string();
  const std::string out = " --out " + (m_dir / "x.npz").string();
  // Temporal flags without snapshots, and a window that leaves no training step: usage errors.
  for (const std::string& args :
       {"--window-snapshots 2" + data, "--window 3" + data, "--link-split 0.5,0.2" + data,
        "--snapshots 10 --window 7" + data}) {
    const Outcome r = run("datasets export " + args + out);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << "\n" << r.err;
  }
  // Snapshots of a dataset that is no event list.
  const Outcome r = run("datasets export --dataset synthetic --snapshots 10" + out);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("is not a temporal dataset"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(m_dir / "x.npz"));
}

}  // namespace
