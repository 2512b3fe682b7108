// `halo datasets` and `halo train --dataset NAME` as a user runs them, against an HTTP mirror
// on 127.0.0.1 that the test starts and stops.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>

#include "support/hetero_fixture.hpp"
#include "support/http_server.hpp"
#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;

using Outcome = halo::testing::CommandOutcome;
using halo::testing::read_file;

fs::path shared_datasets() { return halo::testing::datasets_dir(); }

class DatasetsCli : public ::testing::Test {
 protected:
  DatasetsCli() { server.map("/mirror/cora", shared_datasets() / "planetoid" / "raw"); }

  /// Runs the halo program with a data directory of its own, no inherited registry
  /// environment, quick retries, and `env` (e.g. "HALO_DATASET_MIRROR=...") added.
  Outcome run(const std::string& args, const std::string& env = "") const {
    return halo::testing::run_command(
        "env -u HALO_DATASET_MIRROR -u HALO_OFFLINE HALO_DATA_DIR=" + data_dir().string() +
            " HALO_DOWNLOAD_RETRIES=2 HALO_DOWNLOAD_BACKOFF_S=0.01 " + env + " " + m_binary + " " +
            args,
        m_dir);
  }
  fs::path data_dir() const { return m_dir / "data"; }
  std::string mirror_env() const { return "HALO_DATASET_MIRROR=" + server.url("/mirror"); }

  const std::string m_binary = HALO_TEST_BINARY;
  const halo::testing::TempDir m_temp;
  const fs::path m_dir = m_temp.path();
  halo::testing::HttpTestServer server;
};

TEST_F(DatasetsCli, HelpListsSubcommands) {
  const Outcome r = run("datasets --help");
  EXPECT_EQ(r.code, 0);
  for (const char* s : {"list", "info", "fetch", "convert", "prepare", "export"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  EXPECT_EQ(run("datasets").code, 2);
}

TEST_F(DatasetsCli, ListShowsEveryDatasetAndItsState) {
  const Outcome r = run("datasets list");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"synthetic", "cora", "citeseer", "pubmed", "ogbn-arxiv", "ogbn-products",
                        "reddit", "karate", "rmat", "2708", "10556", "not downloaded", "generated"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  EXPECT_NE(r.out.find(data_dir().string()), std::string::npos) << r.out;
}

TEST_F(DatasetsCli, InfoShowsSourceLicenceCitationAndChecksums) {
  const Outcome r = run("datasets info cora");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s :
       {"raw.githubusercontent.com/kimiyoung/planetoid", "MIT", "Yang", "Kipf",
        "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab", "not downloaded"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  const Outcome m = run("datasets info cora", mirror_env());
  EXPECT_NE(m.out.find(server.url("/mirror/cora/ind.cora.x")), std::string::npos) << m.out;
  const Outcome a = run("datasets info ogbn-arxiv");
  EXPECT_NE(a.out.find("recorded at the first download"), std::string::npos) << a.out;
}

TEST_F(DatasetsCli, UnknownNameIsUsageError) {
  const Outcome r = run("datasets info corra");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("corra"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cora, citeseer"), std::string::npos) << r.err;
}

TEST_F(DatasetsCli, FetchOfflineSaysWhatIsMissingAndWhereFrom) {
  const Outcome r = run("datasets fetch cora --offline");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find((data_dir() / "cora" / "raw" / "ind.cora.x").string()), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("https://raw.githubusercontent.com/"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(DatasetsCli, FetchThroughMirrorThenWorksOffline) {
  Outcome r = run("datasets fetch cora", mirror_env());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("8 files verified"), std::string::npos) << r.out;
  EXPECT_EQ(server.requests().size(), 8u);
  r = run("datasets list");
  EXPECT_NE(r.out.find("downloaded"), std::string::npos) << r.out;
  r = run("datasets fetch cora --offline");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(server.requests().size(), 8u);
}

TEST_F(DatasetsCli, FetchFromVanishedMirrorFailsClearly) {
  const std::string env = mirror_env();
  server.stop();
  const Outcome r = run("datasets fetch cora", env);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/mirror/cora/ind.cora.x"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("curl error 7"), std::string::npos) << r.err;
}

TEST_F(DatasetsCli, ConvertPlanetoidGivesTheSharedPlainCopy) {
  const fs::path out = m_dir / "cora-plain";
  const Outcome r =
      run("datasets convert --from planetoid " +
          (shared_datasets() / "planetoid" / "raw").string() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const fs::path ref = shared_datasets() / "planetoid" / "cora";
  for (const char* f : {"edges.tsv", "labels.txt", "train_idx.txt", "val_idx.txt", "test_idx.txt",
                        "features.coo.tsv"})
    EXPECT_TRUE(read_file(out / f) == read_file(ref / f)) << f;
  const Outcome again =
      run("datasets convert --from planetoid " +
          (shared_datasets() / "planetoid" / "raw").string() + " --out " + out.string());
  EXPECT_EQ(again.code, 1) << "the output directory exists";
  EXPECT_EQ(run("datasets convert --from csv x --out y").code, 2);
}

TEST_F(DatasetsCli, ConvertGraphOnlyFormats) {
  const fs::path mtx = m_dir / "bus";
  Outcome r = run("datasets convert --from mtx " +
                  (shared_datasets() / "matrix_market" / "1138_bus.mtx").string() + " --out " +
                  mtx.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("1138 nodes"), std::string::npos) << r.out;
  const fs::path snap = m_dir / "msg";
  r = run("datasets convert --from edgelist " +
          (shared_datasets() / "collegemsg" / "events.tsv").string() + " --out " + snap.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("1899 nodes"), std::string::npos) << r.out;
  // The output reads back as a plain directory.
  r = run("datasets convert --from plain " + snap.string() + " --out " +
          (m_dir / "again").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_file(snap / "edges.tsv"), read_file(m_dir / "again" / "edges.tsv"));
}

/// Loads an exported .npz with NumPy (what bench/peers/ does) and checks it against what the
/// dataset is: the training graph symmetric without self-loops, features as the first layer
/// reads them, labels and splits. Prints "ok" and facts, or fails with the first broken one.
constexpr const char* kCheckExport = R"PY(
import sys, numpy as np
d = np.load(sys.argv[1])
n = d['indptr'].shape[0] - 1
ip, ix = d['indptr'], d['indices']
assert ip[0] == 0 and ip[-1] == ix.shape[0] and np.all(np.diff(ip) >= 0)
rows = np.repeat(np.arange(n), np.diff(ip))
edges = set(zip(rows.tolist(), ix.tolist()))
assert all((c, r) in edges for r, c in edges), 'training graph not symmetric'
assert not np.any(rows == ix), 'self-loop in the training graph'
assert d['y'].shape == (n,) and d['y'].min() >= 0 and d['y'].max() < int(d['num_classes'])
splits = [set(d[k].tolist()) for k in ('train_idx', 'val_idx', 'test_idx')]
assert not (splits[0] & splits[1]) and not (splits[0] & splits[2]) and not (splits[1] & splits[2])
if 'x' in d.files:
    assert d['x'].shape[0] == n
    print('dense', d['x'].shape[1])
else:
    xp, xd = d['x_indptr'], d['x_data']
    assert tuple(d['x_shape']) [0] == n
    sums = np.add.reduceat(np.abs(xd), xp[:-1])[np.diff(xp) > 0]
    err = float(np.max(np.abs(sums - 1)))
    print('sparse', int(d['x_shape'][1]), 'rows L1-normalised' if err < 1e-5 else 'rows as stored')
print('ok', n, 'nodes', ix.shape[0], 'entries', len(splits[0]), 'train')
)PY";

TEST_F(DatasetsCli, ExportWritesWhatTheTrainingRunReads) {
  const fs::path script = m_dir / "check.py";
  std::ofstream(script) << kCheckExport;
  const fs::path cora = m_dir / "cora.npz";
  Outcome r = run("datasets export --dataset " +
                  (shared_datasets() / "planetoid" / "cora").string() + " --out " + cora.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = halo::testing::run_command("/usr/bin/python3 " + script.string() + " " + cora.string(),
                                 m_dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  // Cora (PROVENANCE.md): 2708 nodes, 5278 undirected edges = 10556 entries, 140 training
  // nodes; 1433 bag-of-words columns, each row divided by its L1 norm.
  EXPECT_NE(r.out.find("ok 2708 nodes 10556 entries 140 train"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sparse 1433 rows L1-normalised"), std::string::npos) << r.out;
  // A generated dataset has dense features; --raw-features keeps a sparse one's as stored.
  const fs::path syn = m_dir / "syn.npz";
  r = run(
      "datasets export --dataset synthetic --synthetic-nodes 300 --synthetic-features 8 --out " +
      syn.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = halo::testing::run_command("/usr/bin/python3 " + script.string() + " " + syn.string(), m_dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("dense 8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok 300 nodes"), std::string::npos) << r.out;
  const fs::path raw = m_dir / "raw.npz";
  r = run("datasets export --raw-features --dataset " +
          (shared_datasets() / "planetoid" / "cora").string() + " --out " + raw.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = halo::testing::run_command("/usr/bin/python3 " + script.string() + " " + raw.string(), m_dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("sparse 1433 rows as stored"), std::string::npos) << r.out;
}

// A typed export: what the heterogeneous task reads, checked from the fixture's own files.
const char* const kCheckTypedExport = R"PY(
import json, sys
import numpy as np
d = np.load(sys.argv[1])
meta = json.loads(bytes(d['meta_json']).decode())
types = meta['node_types']
print('types', ' '.join('%s:%d:%s' % (t['name'], t['num_nodes'], t['features']) for t in types))
print('target', types[meta['target']]['name'], 'split', meta['split'])
for r, rel in enumerate(meta['relations']):
    ip, ix = d['rel_%d_indptr' % r], d['rel_%d_indices' % r]
    nd, ns = types[rel['dst']]['num_nodes'], types[rel['src']]['num_nodes']
    assert ip.shape[0] == nd + 1 and ip[-1] == ix.shape[0], rel
    assert ix.shape[0] == 0 or (ix.min() >= 0 and ix.max() < ns), rel
    for v in range(nd):
        row = ix[ip[v]:ip[v + 1]]
        assert np.all(np.diff(row) > 0), ('sorted, no duplicates', rel, v)
    print('relation', rel['name'], types[rel['src']]['name'], types[rel['dst']]['name'], ix.shape[0])
for t, ty in enumerate(types):
    k = 'x_%d' % t
    if ty['features'] == 'dense':
        assert d[k].shape == (ty['num_nodes'], ty['num_features'])
    elif ty['features'] == 'sparse':
        assert tuple(d[k + '_shape']) == (ty['num_nodes'], ty['num_features'])
    else:
        assert k not in d.files and k + '_indptr' not in d.files
n = types[meta['target']]['num_nodes']
assert d['y'].shape == (n,) and d['y'].min() >= 0 and d['y'].max() < int(d['num_classes'])
print('splits', ' '.join(str(d[s].shape[0]) for s in ('train_idx', 'val_idx', 'test_idx')))
)PY";

TEST_F(DatasetsCli, ExportOfATypedDatasetHoldsEveryTypeAndRelation) {
  const fs::path data = m_dir / "typed";
  fs::create_directories(data);
  const halo::testing::HeteroFixture f = halo::testing::write_hetero_fixture(data);
  const fs::path script = m_dir / "check_typed.py", out = m_dir / "typed.npz";
  std::ofstream(script) << kCheckTypedExport;
  Outcome r =
      run("datasets export --dataset " + data.string() + " --split 4 --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = halo::testing::run_command("/usr/bin/python3 " + script.string() + " " + out.string(), m_dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("types user:30:none item:45:dense tag:9:sparse shop:4:none"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("target item split 4"), std::string::npos) << r.out;
  // The stored relations and their reverses, with the fixture's edge counts.
  const char* names[] = {"buys user item", "tagged item tag", "sells shop item",
                         "follows user user"};
  const char* reverses[] = {"rev_buys item user", "rev_tagged tag item", "rev_sells item shop",
                            "rev_follows user user"};
  for (int k = 0; k < 4; ++k) {
    const std::string count = " " + std::to_string(f.edges[static_cast<std::size_t>(k)].size());
    EXPECT_NE(r.out.find(std::string("relation ") + names[k] + count), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::string("relation ") + reverses[k] + count), std::string::npos)
        << r.out;
  }
  EXPECT_NE(r.out.find("splits " + std::to_string(f.train.size()) + " " +
                       std::to_string(f.val.size()) + " " + std::to_string(f.test.size())),
            std::string::npos)
      << r.out;
  // --split of a split the data lack is an error naming it, and --split of a homogeneous
  // dataset a usage error.
  r = run("datasets export --dataset " + data.string() + " --split 7 --out " + out.string());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("7"), std::string::npos) << r.err;
  r = run("datasets export --dataset synthetic --split 4 --out " + out.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--split"), std::string::npos) << r.err;
}

TEST_F(DatasetsCli, ExportRefusesBadOutputBeforeLoading) {
  Outcome r = run("datasets export --dataset synthetic --out " + (m_dir / "no" / "x.npz").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(m_dir / "no"));
  EXPECT_EQ(run("datasets export --dataset synthetic").code, 2) << "--out is required";
}

/// The peak RSS `halo datasets prepare` reports.
std::uint64_t reported_peak(const std::string& out) {
  const auto at = out.find("peak RSS ");
  return at == std::string::npos ? 0 : std::stoull(out.substr(at + 9));
}

// A store prepared once trains, plans and partitions wherever a dataset is taken; the R-MAT
// store under a budget far below the graph is the one built without a budget, byte for byte,
// at a lower peak.
TEST_F(DatasetsCli, PreparedStoresTrainPlanAndPartition) {
  const std::string rmat =
      "datasets prepare --dataset rmat --rmat-scale 13 --rmat-degree 16 "
      "--rmat-features 1024 --out ";
  const fs::path small = m_dir / "small", big = m_dir / "big";
  Outcome r = run(rmat + small.string() + " --memory-budget 1MiB");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("rmat-13: 8192 nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("streamed: "), std::string::npos) << r.out;
  const std::uint64_t small_peak = reported_peak(r.out);
  r = run(rmat + big.string() + " --memory-budget 4GiB");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::uint64_t big_peak = reported_peak(r.out);
  // The features alone are 32 MiB: the unbounded run holds them in one block, the 1 MiB run
  // 512 KiB at a time.
  EXPECT_LT(small_peak + (24u << 20), big_peak) << small_peak << " vs " << big_peak;
  for (const auto& e : fs::directory_iterator(big))
    EXPECT_EQ(read_file(e.path()), read_file(small / e.path().filename())) << e.path();

  r = run("train --dataset " + small.string() + " --epochs 2 --hidden 8");
  EXPECT_EQ(r.code, 0) << r.err;
  r = run("plan --dataset " + small.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto plan = nlohmann::json::parse(r.out);
  EXPECT_EQ(plan["dataset"], "rmat-13");
  EXPECT_EQ(
      plan["disk_bytes"].get<std::uint64_t>(),
      nlohmann::json::parse(read_file(small / "store.json"))["bytes_on_disk"].get<std::uint64_t>());
  r = run("partition --dataset " + small.string() + " --parts 2 --out " + (m_dir / "p").string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("partition --info " + (m_dir / "p").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("on disk: "), std::string::npos) << r.out;
  // The parts reference the store's 32 MiB of features instead of copying them.
  EXPECT_NE(r.out.find("features: 8192 x 1024 f32 rows referenced from the store " +
                       fs::absolute(small).string()),
            std::string::npos)
      << r.out;
  std::uintmax_t part_bytes = 0;
  for (const auto& e : fs::directory_iterator(m_dir / "p")) part_bytes += e.file_size();
  EXPECT_LT(part_bytes, fs::file_size(small / "features.bin") / 4);
  // Under a budget far below its coarse graphs (on disk, beside --out) the partition is the same,
  // byte for byte, and no scratch file stays.
  for (const char* budget : {"1KiB", "1GiB"}) {
    r = run("partition --dataset " + small.string() +
            " --parts 4 --method lp-multilevel --memory-budget " + budget + " --out " +
            (m_dir / "lp" / budget).string());
    ASSERT_EQ(r.code, 0) << r.err;
  }
  for (int k = 0; k < 4; ++k) {
    const std::string part = "part-" + std::to_string(k) + ".bin";
    EXPECT_EQ(read_file(m_dir / "lp" / "1KiB" / part), read_file(m_dir / "lp" / "1GiB" / part));
  }
  std::int64_t entries = 0;
  for (const auto& e : fs::directory_iterator(m_dir / "lp")) entries += e.is_directory() ? 1 : 100;
  EXPECT_EQ(entries, 2) << "the two partitions, no scratch file";
  r = run("partition --dataset " + small.string() + " --memory-budget lots --out " +
          (m_dir / "bad").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--memory-budget lots"), std::string::npos) << r.err;

  // bfloat16 features: half the bytes.
  r =
      run("datasets prepare --dataset rmat --rmat-scale 10 --rmat-features 64 --feature-dtype "
          "bf16 --out " +
          (m_dir / "bf16").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(fs::file_size(m_dir / "bf16" / "features.bin"), 1024u * 64 * 2);
  EXPECT_EQ(run("train --dataset " + (m_dir / "bf16").string() + " --epochs 1").code, 0);
  // Past a budget below their float32 size its rows are not read from the file (only float32
  // rows are): one usage line saying why and what to do, before any training.
  r = run("train --dataset " + (m_dir / "bf16").string() +
          " --mode mini-batch --fanouts 5,5 --eval-fanouts 5,5 --epochs 1 --memory-budget 160KiB "
          "--json " +
          (m_dir / "bf16.json").string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("holds its features as bf16, converted to float32 in memory when opened "
                       "(262144 bytes"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--feature-dtype f32"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(m_dir / "bf16.json"));
}

// A store larger than --memory-budget trains from its file (features read with pread, the
// evaluation's hidden layers in a temporary file): the same losses and accuracies as from
// memory; a budget that is no size is a usage error.
TEST_F(DatasetsCli, AStoreLargerThanTheBudgetTrainsFromItsFile) {
  const fs::path store = m_dir / "rmat";
  ASSERT_EQ(run("datasets prepare --dataset rmat --rmat-scale 11 --rmat-features 32 --out " +
                store.string())
                .code,
            0);
  const std::string args = "train --dataset " + store.string() +
                           " --model sage --mode mini-batch --fanouts 5,5 --batch-size 64 "
                           "--epochs 2 --threads 2 --json ";
  Outcome r = run(args + (m_dir / "memory.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run(args + (m_dir / "file.json").string() + " --memory-budget 128KiB");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("hidden layers in a temporary file"), std::string::npos) << r.out;
  const auto memory = nlohmann::json::parse(read_file(m_dir / "memory.json"));
  const auto file = nlohmann::json::parse(read_file(m_dir / "file.json"));
  for (const char* key : {"final_train_loss", "val_accuracy", "test_accuracy", "best_epoch"})
    EXPECT_EQ(file[key], memory[key]) << key;
  EXPECT_EQ(memory["disk_bytes_per_epoch"], 0);
  EXPECT_GT(file["disk_bytes_per_epoch"].get<std::int64_t>(), 0);
  EXPECT_GT(file["disk_cache_hit_rate"].get<double>(), 0.0);
  EXPECT_GT(file["disk_read_s"].get<double>(), 0.0);
  // The same blocks either way: at most batch x (5 + 5 x 5) entries per batch of 64 seeds.
  EXPECT_EQ(file["sampled_edges_per_epoch"], memory["sampled_edges_per_epoch"]);
  EXPECT_GT(file["sampled_edges_per_epoch"].get<std::int64_t>(), 0);
  EXPECT_LE(file["sampled_edges_per_epoch"].get<std::int64_t>(),
            file["batches_per_epoch"].get<std::int64_t>() * 64 * 30);
  EXPECT_GT(file["evaluation_spill_bytes"].get<std::int64_t>(), 0);
  EXPECT_LT(file["memory"]["features"].get<std::int64_t>(),
            memory["memory"]["features"].get<std::int64_t>());
  r = run(args + (m_dir / "bad.json").string() + " --memory-budget plenty");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--memory-budget"), std::string::npos) << r.err;
  // Below the sampler's envelope (about 100 KiB here): one usage line with the least that
  // works, before any training; that least then runs.
  r = run(args + (m_dir / "small.json").string() + " --memory-budget 16KiB");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const std::size_t at = r.err.find("at least ");
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--memory-budget 16384 bytes"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(m_dir / "small.json"));
  const std::string least = r.err.substr(at + 9, r.err.find(' ', at + 9) - at - 9);
  r = run(args + (m_dir / "least.json").string() + " --memory-budget " + least);
  EXPECT_EQ(r.code, 0) << r.err;
  // The full graph over a store past the budget holds all of it at once: one usage line
  // naming what it needs, before any training; that much then trains.
  const std::string full = "train --dataset " + store.string() + " --epochs 1 --json ";
  r = run(full + (m_dir / "full.json").string() + " --memory-budget 128KiB");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("--mode full-graph on the store"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(m_dir / "full.json"));
  const std::size_t needs = r.err.find("needs about ");
  ASSERT_NE(needs, std::string::npos) << r.err;
  const std::string need = r.err.substr(needs + 12, r.err.find(' ', needs + 12) - needs - 12);
  EXPECT_GT(std::stoll(need), 131072) << r.err;
  r = run(full + (m_dir / "full.json").string() + " --memory-budget " + need);
  EXPECT_EQ(r.code, 0) << r.err;
}

// A bare edge list (no labels, features or splits) is enough to prepare and partition.
TEST_F(DatasetsCli, ABareEdgeListPreparesAndPartitions) {
  const fs::path web = m_dir / "web";
  fs::create_directories(web);
  std::ofstream(web / "edges.tsv") << "0\t1\n1\t2\n2\t0\n3\t4\n4\t5\n5\t3\n2\t3\n";
  Outcome r =
      run("partition --dataset " + web.string() + " --parts 2 --out " + (m_dir / "p").string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("datasets prepare --dataset " + web.string() + " --out " + (m_dir / "s").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("web: 6 nodes, 7 entries, 0 features"), std::string::npos) << r.out;
  r = run("partition --dataset " + (m_dir / "s").string() + " --parts 2 --out " +
          (m_dir / "q").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_file(m_dir / "p" / "part-0.bin"), read_file(m_dir / "q" / "part-0.bin"));
}

TEST_F(DatasetsCli, PrepareRefusesBadFlagsAndBadStores) {
  Outcome r =
      run("datasets prepare --dataset rmat --memory-budget lots --out " + (m_dir / "s").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--memory-budget lots"), std::string::npos) << r.err;
  EXPECT_EQ(run("datasets prepare --dataset rmat --feature-dtype f64 --out x").code, 2);
  EXPECT_EQ(run("datasets prepare --dataset rmat").code, 2) << "--out is required";
  std::ofstream(m_dir / "afile") << "x";
  r = run("datasets prepare --dataset rmat --out " + (m_dir / "afile" / "s").string());
  EXPECT_EQ(r.code, 2) << "checked before any work";
  EXPECT_NE(r.err.find("--out"), std::string::npos) << r.err;
  // A store whose array was cut short: one line naming the file, exit 1.
  ASSERT_EQ(
      run("datasets prepare --dataset rmat --rmat-scale 8 --out " + (m_dir / "s").string()).code,
      0);
  fs::resize_file(m_dir / "s" / "graph.indices.bin", 100);
  r = run("train --dataset " + (m_dir / "s").string() + " --epochs 1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find((m_dir / "s" / "graph.indices.bin").string() +
                       ": corrupt store: the file has 100 bytes"),
            std::string::npos)
      << r.err;
}

// A build that runs out of disk (here a file-size limit: writes past 2 MiB fail with EFBIG, as
// on a full disk) stops with one line naming the file, exit 1, and leaves nothing behind.
TEST_F(DatasetsCli, PrepareOnAFullDiskFailsCleanly) {
  const fs::path out = m_dir / "full" / "s";
  fs::create_directories(out.parent_path());
  const Outcome r = halo::testing::run_command(
      "bash -c 'ulimit -f 2048; exec " + m_binary +
          " datasets prepare --dataset rmat --rmat-scale 12 --rmat-features 256 --out " +
          out.string() + "'",
      m_dir);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("features.bin: write error: File too large"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(fs::is_empty(out.parent_path())) << "no store, no temporary directory";
}

// The same on a real full file system: a 2 MiB tmpfs mounted in a private mount namespace
// (unshare: root or unprivileged user namespaces), where the build fails with ENOSPC.
TEST_F(DatasetsCli, PrepareOnAFullTmpfsFailsCleanly) {
  if (halo::testing::run_command("unshare -rm true", m_dir).code != 0)
    GTEST_SKIP() << "no mount namespace here (unshare -rm)";
  const fs::path mnt = m_dir / "mnt";
  fs::create_directories(mnt);
  const std::string inner =
      "mount -t tmpfs -o size=2m tmpfs " + mnt.string() + " && { " + m_binary +
      " datasets prepare --dataset rmat --rmat-scale 12 --rmat-features 256 "
      "--out " +
      (mnt / "s").string() + "; echo rc=$?; echo left=$(ls -A " + mnt.string() + "); }";
  const Outcome r = halo::testing::run_command("unshare -rm sh -c '" + inner + "'", m_dir);
  EXPECT_NE(r.out.find("rc=1\n"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("left=\n"), std::string::npos) << "no store, no temporary: " << r.out;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(mnt.string()), std::string::npos) << "names the file: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

// SIGTERM or SIGINT during a build ends `halo datasets prepare` by that signal and removes the
// store's temporary directory (its edge file included).
TEST_F(DatasetsCli, PrepareEndedBySignalLeavesNothing) {
  for (const auto& [sig, status] : {std::pair{"TERM", 143}, std::pair{"INT", 130}}) {
    const fs::path out = m_dir / (std::string("s-") + sig);
    const std::string script =
        "set -m; " + m_binary +
        " datasets prepare --dataset rmat --rmat-scale 17 --rmat-degree 16 --rmat-features 64 "
        "--memory-budget 1MiB --out " +
        out.string() + " & pid=$!; for i in $(seq 1200); do ls " + m_dir.string() +
        "/s-*.tmp-*/edges.spill >/dev/null 2>&1 && break; sleep 0.05; done; kill -" + sig +
        " $pid; wait $pid; echo status $?";
    const Outcome r = halo::testing::run_command("bash -c '" + script + "'", m_dir);
    EXPECT_NE(r.out.find("status " + std::to_string(status)), std::string::npos) << r.out << r.err;
    EXPECT_FALSE(fs::exists(out));
    for (const auto& e : fs::directory_iterator(m_dir))
      EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
}

TEST_F(DatasetsCli, TrainByNameThroughMirrorMatchesPlainDirectory) {
  const fs::path a = m_dir / "by-name.json", b = m_dir / "by-dir.json";
  const std::string flags = " --epochs 200 --seed 3 --threads 2 --json ";
  Outcome r = run("train --dataset cora" + flags + a.string(), mirror_env());
  ASSERT_EQ(r.code, 0) << r.err;
  r = run("train --dataset " + (shared_datasets() / "planetoid" / "cora").string() + flags +
          b.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const auto ja = nlohmann::json::parse(read_file(a)), jb = nlohmann::json::parse(read_file(b));
  EXPECT_EQ(ja["num_nodes"], 2708);
  EXPECT_EQ(ja["num_edges"], jb["num_edges"]);
  EXPECT_EQ(ja["best_epoch"], jb["best_epoch"]);
  EXPECT_DOUBLE_EQ(ja["test_accuracy"].get<double>(), jb["test_accuracy"].get<double>());
  EXPECT_GT(ja["test_accuracy"].get<double>(), 0.75);
  EXPECT_EQ(server.requests().size(), 8u);

  // Offline, the store is enough.
  r = run("train --dataset cora --offline --epochs 2");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(server.requests().size(), 8u);
}

TEST_F(DatasetsCli, TrainOfflineWithoutDataSaysWhatIsMissing) {
  const Outcome r = run("train --dataset cora --offline --epochs 2");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("not available offline"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("halo datasets fetch cora"), std::string::npos) << r.err;
}

}  // namespace
