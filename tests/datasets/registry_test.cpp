// The dataset registry: the table, mirrors, offline use, recorded checksums, and loading Cora
// through an HTTP mirror on 127.0.0.1 and the graph store.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>

#include <halo/datasets/readers/plain_format.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/kernels/error.hpp>

#include "archive_test_util.hpp"
#include "datasets_test_util.hpp"
#include "ogb_mag_fixture.hpp"
#include "support/http_server.hpp"

namespace halo::datasets::test {
namespace {

using halo::testing::HttpTestServer;

fs::path shared_datasets() { return halo::testing::datasets_dir(); }

/// Sets (or unsets, with nullopt) an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::optional<std::string>& value) : m_name(name) {
    if (const char* old = std::getenv(name)) m_old = old;
    if (value)
      ::setenv(name, value->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (m_old)
      ::setenv(m_name, m_old->c_str(), 1);
    else
      ::unsetenv(m_name);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* m_name;
  std::optional<std::string> m_old;
};

DownloadOptions quick() {
  DownloadOptions o;
  o.max_attempts = 2;
  o.initial_backoff_s = 0.01;
  return o;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Every test runs with the registry's environment variables cleared.
class Registry : public ::testing::Test {
 protected:
  Registry() {
    server.map("/mirror/cora", shared_datasets() / "planetoid" / "raw");
    options.data_dir = temp.path() / "data";
    options.download = quick();
  }

  ScopedEnv no_mirror{"HALO_DATASET_MIRROR", std::nullopt};
  ScopedEnv no_offline{"HALO_OFFLINE", std::nullopt};
  ScopedEnv no_data_dir{"HALO_DATA_DIR", std::nullopt};
  TempDir temp;
  HttpTestServer server;
  LoadOptions options;
};

TEST_F(Registry, ListsEveryDataset) {
  std::vector<std::string> names;
  for (const auto& d : list_datasets()) {
    names.push_back(d.name);
    EXPECT_FALSE(d.description.empty()) << d.name;
    EXPECT_FALSE(d.licence.empty()) << d.name;
    EXPECT_FALSE(d.citation.empty()) << d.name;
    for (const auto& f : d.files) {
      EXPECT_EQ(f.url.rfind("http", 0), 0u) << f.url;
      EXPECT_TRUE(f.sha256.empty() || f.sha256.size() == 64) << f.file_name;
    }
  }
  for (const char* n : {"synthetic", "rmat", "cora", "citeseer", "pubmed", "ogbn-arxiv",
                        "ogbn-products", "reddit", "karate", "ogbn-papers100M", "ogbn-mag"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  EXPECT_EQ(find_dataset("cora").files.size(), 8u);
  EXPECT_EQ(find_dataset("cora").num_nodes, 2708);
  try {
    find_dataset("corra");
    FAIL() << "expected LogicError";
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("cora, citeseer"), std::string::npos) << e.what();
  }
}

TEST_F(Registry, CoraChecksumsMatchTheSharedCopy) {
  for (const auto& f : find_dataset("cora").files) {
    const fs::path p = shared_datasets() / "planetoid" / "raw" / f.file_name;
    EXPECT_EQ(f.sha256, sha256_file(p)) << f.file_name;
    EXPECT_EQ(f.size_bytes, static_cast<std::int64_t>(fs::file_size(p))) << f.file_name;
  }
}

TEST_F(Registry, DataDirComesFromEnvironment) {
  {
    const ScopedEnv dir("HALO_DATA_DIR", "/some/where");
    EXPECT_EQ(default_data_dir(), fs::path("/some/where"));
    EXPECT_EQ(dataset_paths(find_dataset("cora")).raw, fs::path("/some/where/cora/raw"));
  }
  const ScopedEnv xdg("XDG_CACHE_HOME", std::nullopt);
  const ScopedEnv home("HOME", "/home/u");
  EXPECT_EQ(default_data_dir(), fs::path("/home/u/.cache/halo"));
  const DatasetPaths p = dataset_paths(find_dataset("cora"), options);
  EXPECT_EQ(p.root, options.data_dir / "cora");
  EXPECT_EQ(p.cache, options.data_dir / "cora" / "cache");
}

TEST_F(Registry, MirrorReplacesOfficialUrls) {
  const DatasetInfo& cora = find_dataset("cora");
  const RemoteFile& x = cora.files.at(0);
  EXPECT_EQ(source_url(cora, x, options), x.url);
  options.mirror = "http://host:8/base/";
  EXPECT_EQ(source_url(cora, x, options), "http://host:8/base/cora/ind.cora.x");
  options.mirror.clear();
  {
    const ScopedEnv m("HALO_DATASET_MIRROR", "file:///srv/m");
    EXPECT_EQ(source_url(cora, x, options), "file:///srv/m/cora/ind.cora.x");
  }
  options.mirror = "ftp://host/base";
  EXPECT_THROW(source_url(cora, x, options), LogicError);
}

TEST_F(Registry, FetchesThroughHttpMirrorOnce) {
  options.mirror = server.url("/mirror");
  const auto paths = fetch_dataset(find_dataset("cora"), options);
  ASSERT_EQ(paths.size(), 8u);
  for (const auto& p : paths)
    EXPECT_EQ(read_all(p), read_all(shared_datasets() / "planetoid" / "raw" / p.filename()));
  EXPECT_EQ(server.requests().size(), 8u);
  EXPECT_EQ(local_state(find_dataset("cora"), options), LocalState::Downloaded);
  fetch_dataset(find_dataset("cora"), options);  // present and verified: nothing downloaded
  EXPECT_EQ(server.requests().size(), 8u);
}

TEST_F(Registry, FetchesThroughFileMirror) {
  const fs::path mirror = temp.path() / "mirror";
  fs::create_directories(mirror / "cora");
  for (const auto& e : fs::directory_iterator(shared_datasets() / "planetoid" / "raw"))
    fs::copy_file(e.path(), mirror / "cora" / e.path().filename());
  const ScopedEnv m("HALO_DATASET_MIRROR", "file://" + mirror.string());
  const auto paths = fetch_dataset(find_dataset("cora"), options);
  EXPECT_EQ(read_all(paths.at(6)), read_all(mirror / "cora" / "ind.cora.graph"));
}

TEST_F(Registry, TamperedFileIsRefused) {
  options.mirror = server.url("/mirror");
  const auto paths = fetch_dataset(find_dataset("cora"), options);
  write_text(paths.at(0), "not the features");
  try {
    fetch_dataset(find_dataset("cora"), options);
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("ind.cora.x: SHA-256"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("delete the file"), std::string::npos) << e.what();
  }
}

/// A dataset outside the table whose file has no known checksum.
DatasetInfo unverified_dataset() {
  DatasetInfo info;
  info.name = "toy";
  info.format = DatasetFormat::Planetoid;
  info.files = {{"edges.tsv", "https://example.invalid/edges.tsv", 0, {}}};
  return info;
}

TEST_F(Registry, RecordsChecksumOnFirstDownloadAndVerifiesLater) {
  const fs::path served = temp.path() / "served";
  fs::create_directories(served);
  write_text(served / "edges.tsv", "0\t1\n1\t0\n");
  server.map("/m/toy", served);
  options.mirror = server.url("/m");
  const DatasetInfo info = unverified_dataset();
  const auto paths = fetch_dataset(info, options);
  const DatasetPaths p = dataset_paths(info, options);
  nlohmann::json j;
  std::ifstream(p.checksums) >> j;
  EXPECT_EQ(j["files"]["edges.tsv"]["sha256"], sha256_hex("0\t1\n1\t0\n"));
  EXPECT_EQ(expected_sha256(info, info.files[0], options), sha256_hex("0\t1\n1\t0\n"));

  // The upstream file changes: a new download no longer matches what was recorded.
  fs::remove(paths[0]);
  write_text(served / "edges.tsv", "0\t2\n2\t0\n");
  try {
    fetch_dataset(info, options);
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("SHA-256"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(paths[0]));
  EXPECT_FALSE(fs::exists(paths[0].string() + ".part"));
}

TEST_F(Registry, OfflineNamesMissingFilesAndTheirSources) {
  options.offline = true;
  try {
    fetch_dataset(find_dataset("cora"), options);
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("offline"), std::string::npos) << what;
    EXPECT_NE(what.find((options.data_dir / "cora" / "raw" / "ind.cora.x").string()),
              std::string::npos)
        << what;
    EXPECT_NE(what.find(find_dataset("cora").files[0].url), std::string::npos) << what;
  }
  options.offline = false;
  const ScopedEnv off("HALO_OFFLINE", "1");
  EXPECT_THROW(load_dataset(cpu(), "cora", options), IoError);
  EXPECT_TRUE(server.requests().empty());
}

void expect_same_dataset(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(a.num_nodes(), b.num_nodes());
  EXPECT_EQ(a.num_features(), b.num_features());
  EXPECT_EQ(a.num_classes, b.num_classes);
  EXPECT_EQ(vec(a.graph.indptr), vec(b.graph.indptr));
  EXPECT_EQ(vec(a.graph.indices), vec(b.graph.indices));
  EXPECT_EQ(vec(a.labels), vec(b.labels));
  EXPECT_EQ(vec(a.train_idx), vec(b.train_idx));
  EXPECT_EQ(vec(a.val_idx), vec(b.val_idx));
  EXPECT_EQ(vec(a.test_idx), vec(b.test_idx));
  using Sparse = kernels::CsrMatrix<std::int32_t, float>;
  ASSERT_EQ(a.features.index(), b.features.index());
  if (std::holds_alternative<Sparse>(a.features)) {
    const auto& fa = std::get<Sparse>(a.features);
    const auto& fb = std::get<Sparse>(b.features);
    EXPECT_EQ(vec(fa.indptr), vec(fb.indptr));
    EXPECT_EQ(vec(fa.indices), vec(fb.indices));
    if (!fa.values.empty() || !fb.values.empty()) {
      const auto va =
          fa.values.empty() ? std::vector<float>(fa.indices.numel(), 1.f) : vec(fa.values);
      const auto vb =
          fb.values.empty() ? std::vector<float>(fb.indices.numel(), 1.f) : vec(fb.values);
      EXPECT_EQ(va, vb);
    }
  } else {
    EXPECT_EQ(vec(std::get<Tensor<float>>(a.features)), vec(std::get<Tensor<float>>(b.features)));
  }
}

TEST_F(Registry, LoadsCoraThroughMirrorThenFromCache) {
  options.mirror = server.url("/mirror");
  const Dataset reference = read_directory(cpu(), shared_datasets() / "planetoid" / "cora");
  const Dataset first = load_dataset(cpu(), "cora", options);
  EXPECT_EQ(first.name, "cora");
  expect_same_dataset(first, reference);
  EXPECT_EQ(local_state(find_dataset("cora"), options), LocalState::Cached);

  // The store needs neither the network nor the raw files.
  server.stop();
  fs::remove_all(dataset_paths(find_dataset("cora"), options).raw);
  options.offline = true;
  const Dataset second = load_dataset(cpu(), "cora", options);
  expect_same_dataset(second, reference);
}

TEST_F(Registry, LoadsDirectoriesAndGenerators) {
  const Dataset plain = load_dataset(cpu(), (shared_datasets() / "planetoid" / "cora").string());
  EXPECT_EQ(plain.num_nodes(), 2708);
  options.synthetic.num_nodes = 100;
  EXPECT_EQ(load_dataset(cpu(), "synthetic", options).num_nodes(), 100);
  options.rmat.scale = 6;
  EXPECT_EQ(load_dataset(cpu(), "rmat", options).num_nodes(), 64);
  try {
    load_dataset(cpu(), "corra", options);
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("cora, citeseer"), std::string::npos) << e.what();
  }
}

// Each generator draws from its own config's seed and nothing else (not the other generator's
// seed, not the thread count), so the CLI can keep a run's --seed away from the data.
TEST_F(Registry, GeneratorsDependOnlyOnTheirOwnSeed) {
  options.synthetic.num_nodes = 300;
  options.rmat.scale = 8;
  const auto indices = [](const Dataset& ds) { return vec(ds.graph.indices); };
  const auto load = [&](const char* name, int threads) {
    return load_dataset(kernels::Resources(Device::Cpu, threads), name, options);
  };
  for (const char* name : {"synthetic", "rmat"}) {
    SCOPED_TRACE(name);
    const bool synthetic = std::string(name) == "synthetic";
    std::uint64_t& own = synthetic ? options.synthetic.seed : options.rmat.seed;
    std::uint64_t& other = synthetic ? options.rmat.seed : options.synthetic.seed;
    own = 0;
    other = 0;
    const Dataset base = load(name, 1);
    other = 7;
    const Dataset other_seed = load(name, 3);
    EXPECT_EQ(indices(base), indices(other_seed));
    EXPECT_EQ(vec(base.labels), vec(other_seed.labels));
    EXPECT_EQ(vec(base.train_idx), vec(other_seed.train_idx));
    own = 7;
    const Dataset own_seed = load(name, 1);
    EXPECT_NE(indices(base), indices(own_seed));
    other = 0;
    EXPECT_EQ(indices(load(name, 2)), indices(own_seed));
  }
}

/// shared/datasets/karate as NetworkX writes GML, with the extra keys the real file carries.
std::string karate_gml() {
  std::ifstream edges(shared_datasets() / "karate" / "edges.tsv");
  std::ifstream labels(shared_datasets() / "karate" / "labels.txt");
  std::string gml = "graph [\n  name \"Zachary's Karate Club\"\n  attrs [ x 1 ]\n";
  int club = 0;
  std::vector<int> clubs;
  while (labels >> club) clubs.push_back(club);
  for (std::size_t id = 0; id < clubs.size(); ++id)
    gml += "  node [\n    id " + std::to_string(id) + "\n    label \"" + std::to_string(id) +
           "\"\n    club \"" + (clubs[id] == 0 ? "Mr. Hi" : "Officer") +
           "\"\n    betweenness 0.0125\n  ]\n";
  int u = 0, v = 0, w = 0;
  while (edges >> u >> v >> w)
    gml += "  edge [\n    source " + std::to_string(u) + "\n    target " + std::to_string(v) +
           "\n    weight " + std::to_string(w) + "\n  ]\n";
  return gml + "]\n";
}

TEST_F(Registry, LoadsKarateFromGml) {
  const fs::path served = temp.path() / "served";
  fs::create_directories(served);
  write_text(served / "karate_with_attributes.gml", karate_gml());
  server.map("/m/karate", served);
  options.mirror = server.url("/m");
  const Dataset ds = load_dataset(cpu(), "karate", options);
  EXPECT_EQ(ds.num_nodes(), 34);
  EXPECT_EQ(ds.graph.num_edges(), 156);
  EXPECT_TRUE(ds.graph.symmetric);
  EXPECT_EQ(ds.num_features(), 34);
  EXPECT_EQ(ds.num_classes, 2);
  EXPECT_EQ(vec(ds.train_idx), (std::vector<NodeId>{0, 33}));
  EXPECT_EQ(ds.val_idx.numel() + ds.test_idx.numel(), 32);
  const auto labels = vec(ds.labels);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), 1), 17);
  EXPECT_EQ(labels[0], 0);
  EXPECT_EQ(labels[33], 1);
}

TEST_F(Registry, MalformedKarateGmlNamesFileAndLine) {
  const fs::path served = temp.path() / "served";
  fs::create_directories(served);
  write_text(served / "karate_with_attributes.gml",
             "graph [\n  node [\n    id 0\n    club \"Mr. Hi\"\n  ]\n  node [\n    id 1\n  "
             "]\n  node [ id 2 club \"Officer\" ]\n]\n");
  server.map("/m/karate", served);
  options.mirror = server.url("/m");
  try {
    load_dataset(cpu(), "karate", options);
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("karate_with_attributes.gml:6: expected club"),
              std::string::npos)
        << e.what();
  }
}

/// A version-1.0 .npy file holding `values` with NumPy dtype `descr` and `shape` ("(2, 3)").
template <class T>
std::string npy_file(const char* descr, const std::string& shape, const std::vector<T>& values) {
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  std::string data(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(data.data(), values.data(), data.size());
  return out + header + data;
}

/// The bytes of a file written by `write`, which is given a scratch path.
template <class F>
std::string bytes_of(const fs::path& scratch, F&& write) {
  write(scratch);
  std::string b = read_file(scratch);
  fs::remove(scratch);
  return b;
}

/// 6 nodes in two classes, 2 features; node 5 is unlabeled in the binary layout.
constexpr const char* kOgbEdges = "0,1\n1,2\n2,0\n3,4\n4,5\n5,3\n";

TEST_F(Registry, LoadsOgbCsvZipThroughMirror) {
  const fs::path served = temp.path() / "served";
  fs::create_directories(served / "ogbn-arxiv");
  const fs::path tmp = temp.path() / "scratch";
  auto gz = [&](const std::string& text) {
    return bytes_of(tmp, [&](const fs::path& p) { write_gz(p, text); });
  };
  const std::vector<std::pair<std::string, std::string>> entries = {
      {"arxiv/raw/edge.csv.gz", gz(kOgbEdges)},
      {"arxiv/raw/num-node-list.csv.gz", gz("6\n")},
      {"arxiv/raw/node-feat.csv.gz", gz("1,0\n1,0\n1,0\n0,1\n0,1\n0,1\n")},
      {"arxiv/raw/node-label.csv.gz", gz("0\n0\n0\n1\n1\n1\n")},
      {"arxiv/split/time/train.csv.gz", gz("0\n3\n")},
      {"arxiv/split/time/valid.csv.gz", gz("1\n4\n")},
      {"arxiv/split/time/test.csv.gz", gz("2\n5\n")}};
  write_zip(served / "ogbn-arxiv" / "arxiv.zip", entries);
  server.map("/m", served);
  options.mirror = server.url("/m");
  const Dataset ds = load_dataset(cpu(), "ogbn-arxiv", options);
  EXPECT_EQ(ds.name, "ogbn-arxiv");
  EXPECT_EQ(ds.num_nodes(), 6);
  EXPECT_EQ(ds.graph.num_edges(), 6);
  EXPECT_EQ(ds.num_features(), 2);
  EXPECT_EQ(vec(ds.test_idx), (std::vector<NodeId>{2, 5}));
  EXPECT_TRUE(fs::is_directory(dataset_paths(find_dataset("ogbn-arxiv"), options).extracted));
}

TEST_F(Registry, LoadsOgbMagZipThroughMirror) {
  const fs::path served = temp.path() / "served";
  fs::create_directories(served / "ogbn-mag");
  const fs::path tmp = temp.path() / "scratch";
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [path, text] : mag_fixture_files())
    entries.emplace_back("mag/" + path,
                         bytes_of(tmp, [&](const fs::path& p) { write_gz(p, text); }));
  write_zip(served / "ogbn-mag" / "mag.zip", entries);
  server.map("/m", served);
  options.mirror = server.url("/m");
  EXPECT_TRUE(is_hetero_dataset("ogbn-mag"));
  EXPECT_FALSE(is_hetero_dataset("ogbn-arxiv"));
  const HeteroGraph g = load_hetero_dataset(cpu(), "ogbn-mag", std::nullopt, options);
  EXPECT_EQ(g.name, "ogbn-mag");
  EXPECT_EQ(g.num_types(), 4);
  EXPECT_EQ(g.relations.size(), 8u);
  EXPECT_EQ(g.node_types[static_cast<std::size_t>(g.target_type)].name, "paper");
  EXPECT_EQ(vec(g.test_idx), (std::vector<NodeId>{3}));
  // The homogeneous loader and a --split refuse it with a clear message.
  EXPECT_THROW(load_dataset(cpu(), "ogbn-mag", options), IoError);
  EXPECT_THROW(load_hetero_dataset(cpu(), "ogbn-mag", 20, options), IoError);
}

TEST_F(Registry, LoadsOgbBinaryZipThroughMirror) {
  const fs::path served = temp.path() / "served";
  fs::create_directories(served / "ogbn-papers100M");
  const fs::path tmp = temp.path() / "scratch.zip";
  const std::string data_npz = bytes_of(tmp, [&](const fs::path& p) {
    write_zip(p, {{"edge_index.npy",
                   npy_file<std::int64_t>("<i8", "(2, 6)", {0, 1, 2, 3, 4, 5, 1, 2, 0, 4, 5, 3})},
                  {"node_feat.npy",
                   npy_file<float>("<f4", "(6, 2)", {1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1})},
                  {"num_nodes_list.npy", npy_file<std::int64_t>("<i8", "(1,)", {6})}});
  });
  const double nan = std::nan("");
  const std::string label_npz = bytes_of(tmp, [&](const fs::path& p) {
    write_zip(p, {{"node_label.npy", npy_file<double>("<f8", "(6, 1)", {0, 0, 0, 1, 1, nan})}});
  });
  auto gz = [&](const std::string& text) {
    return bytes_of(temp.path() / "scratch.gz", [&](const fs::path& p) { write_gz(p, text); });
  };
  write_zip(served / "ogbn-papers100M" / "papers100M-bin.zip",
            {{"papers100M-bin/raw/data.npz", data_npz},
             {"papers100M-bin/raw/node-label.npz", label_npz},
             {"papers100M-bin/split/time/train.csv.gz", gz("0\n3\n")},
             {"papers100M-bin/split/time/valid.csv.gz", gz("1\n")},
             {"papers100M-bin/split/time/test.csv.gz", gz("2\n4\n")}});
  server.map("/m", served);
  options.mirror = server.url("/m");
  const Dataset ds = load_dataset(cpu(), "ogbn-papers100M", options);
  EXPECT_EQ(ds.num_nodes(), 6);
  EXPECT_EQ(ds.graph.num_edges(), 6);
  EXPECT_EQ(ds.num_features(), 2);
  EXPECT_EQ(ds.num_classes, 2);
  EXPECT_EQ(vec(ds.labels), (std::vector<std::int32_t>{0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(vec(ds.test_idx), (std::vector<NodeId>{2, 4}));
  // Edge 0 -> 1 is column 0 of row 1.
  EXPECT_EQ(vec(ds.graph.indices)[static_cast<std::size_t>(vec(ds.graph.indptr)[1])], 0);
}

TEST_F(Registry, LoadsRedditZipThroughMirror) {
  const fs::path served = temp.path() / "served";
  fs::create_directories(served / "reddit");
  const fs::path tmp = temp.path() / "scratch.npz";
  const std::string data_npz = bytes_of(tmp, [&](const fs::path& p) {
    write_zip(p, {{"feature.npy", npy_file<float>("<f4", "(3, 1)", {1, 2, 3})},
                  {"label.npy", npy_file<std::int64_t>("<i8", "(3,)", {0, 1, 1})},
                  {"node_types.npy", npy_file<std::int32_t>("<i4", "(3,)", {1, 2, 3})}});
  });
  const std::string graph_npz = bytes_of(tmp, [&](const fs::path& p) {
    write_zip(p, {{"format.npy", npy_file<char>("|S3", "()", {'c', 's', 'r'})},
                  {"shape.npy", npy_file<std::int64_t>("<i8", "(2,)", {3, 3})},
                  {"indptr.npy", npy_file<std::int32_t>("<i4", "(4,)", {0, 1, 3, 4})},
                  {"indices.npy", npy_file<std::int32_t>("<i4", "(4,)", {1, 0, 2, 1})},
                  {"data.npy", npy_file<float>("<f4", "(4,)", {1, 1, 1, 1})}});
  });
  write_zip(served / "reddit" / "reddit.zip",
            {{"reddit_data.npz", data_npz}, {"reddit_graph.npz", graph_npz}});
  server.map("/m", served);
  options.mirror = server.url("/m");
  const Dataset ds = load_dataset(cpu(), "reddit", options);
  EXPECT_EQ(ds.name, "reddit");
  EXPECT_EQ(ds.num_nodes(), 3);
  EXPECT_EQ(ds.graph.num_edges(), 4);
  EXPECT_EQ(vec(ds.val_idx), (std::vector<NodeId>{1}));
}

}  // namespace
}  // namespace halo::datasets::test
