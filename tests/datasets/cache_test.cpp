// The binary cache: round trips, invalidation (missing, version, checksum) and corrupt entries.

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <halo/datasets/cache.hpp>
#include <halo/datasets/planetoid.hpp>
#include <halo/kernels/error.hpp>

#include "archive_test_util.hpp"
#include "datasets_test_util.hpp"

namespace halo::datasets::test {
namespace {

void expect_same(const Dataset& a, const Dataset& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(vec(a.graph.indptr), vec(b.graph.indptr));
  EXPECT_EQ(vec(a.graph.indices), vec(b.graph.indices));
  EXPECT_EQ(vec(a.graph.values), vec(b.graph.values));
  EXPECT_EQ(a.graph.num_cols, b.graph.num_cols);
  EXPECT_EQ(a.graph.symmetric, b.graph.symmetric);
  ASSERT_EQ(a.features.index(), b.features.index());
  if (const auto* x = std::get_if<kernels::Tensor<float>>(&a.features)) {
    const auto& y = std::get<kernels::Tensor<float>>(b.features);
    EXPECT_EQ(x->rows(), y.rows());
    EXPECT_EQ(x->cols(), y.cols());
    EXPECT_EQ(vec(*x), vec(y));
  } else {
    const auto& xs = std::get<kernels::CsrMatrix<std::int32_t, float>>(a.features);
    const auto& ys = std::get<kernels::CsrMatrix<std::int32_t, float>>(b.features);
    EXPECT_EQ(xs.num_cols, ys.num_cols);
    EXPECT_EQ(vec(xs.indptr), vec(ys.indptr));
    EXPECT_EQ(vec(xs.indices), vec(ys.indices));
    EXPECT_EQ(vec(xs.values), vec(ys.values));
  }
  EXPECT_EQ(vec(a.labels), vec(b.labels));
  EXPECT_EQ(a.num_classes, b.num_classes);
  EXPECT_EQ(vec(a.train_idx), vec(b.train_idx));
  EXPECT_EQ(vec(a.val_idx), vec(b.val_idx));
  EXPECT_EQ(vec(a.test_idx), vec(b.test_idx));
}

std::string error_of(const fs::path& dir, const std::string& checksum) {
  try {
    read_cache(cpu(), dir, checksum);
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

void replace_in_file(const fs::path& path, const std::string& from, const std::string& to) {
  std::string text = read_file(path);
  const auto at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  write_text(path, text);
}

TEST(Cache, RoundTripsDenseAndWeighted) {
  TempDir tmp;
  Dataset ds = tiny_dataset();
  ds.graph = make_graph(5, {{0, 1}, {1, 0}, {2, 1}}, {0.5f, 2.0f, -1.0f});
  write_cache(cpu(), ds, tmp.path() / "c" / "tiny", "sha-1");
  const auto got = read_cache(cpu(), tmp.path() / "c" / "tiny", "sha-1");
  ASSERT_TRUE(got.has_value());
  expect_same(*got, ds);
}

TEST(Cache, RoundTripsCoraAndReplacesOldEntries) {
  TempDir tmp;
  const fs::path raw = halo::testing::datasets_dir() / "planetoid" / "raw";
  const Dataset cora = read_planetoid(cpu(), raw, "cora");
  const fs::path dir = tmp.path() / "cora";
  write_cache(cpu(), tiny_dataset(), dir, "old");
  write_cache(cpu(), cora, dir, "new");
  EXPECT_FALSE(read_cache(cpu(), dir, "old").has_value());
  const auto got = read_cache(cpu(), dir, "new");
  ASSERT_TRUE(got.has_value());
  expect_same(*got, cora);
  // Nothing but the entry is left beside it.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST(Cache, MissingVersionOrChecksumChangeGivesNothing) {
  TempDir tmp;
  EXPECT_FALSE(read_cache(cpu(), tmp.path() / "none", "x").has_value());
  const fs::path dir = tmp.path() / "d";
  write_cache(cpu(), tiny_dataset(), dir, "abc");
  EXPECT_TRUE(read_cache(cpu(), dir, "abc").has_value());
  EXPECT_FALSE(read_cache(cpu(), dir, "abd").has_value());
  replace_in_file(dir / "meta.json", "\"format_version\": " + std::to_string(kCacheFormatVersion),
                  "\"format_version\": 999");
  EXPECT_FALSE(read_cache(cpu(), dir, "abc").has_value());
}

// halo plan's counts: the training graph S = A ∪ Aᵀ without self-loops, counted by brute force
// here, and read back from meta.json alone (the arrays are removed first).
TEST(Cache, CountsOfTheTrainingGraphComeFromMetaAlone) {
  TempDir tmp;
  Dataset ds = tiny_dataset();
  const std::vector<std::pair<int, int>> entries = {{0, 1}, {2, 1}, {3, 3}, {4, 2}, {1, 0}, {4, 1}};
  ds.graph = make_graph(5, entries, {});
  std::set<std::pair<int, int>> s;
  for (const auto& [r, c] : entries)
    if (r != c) {
      s.insert({r, c});
      s.insert({c, r});
    }
  std::vector<std::int64_t> degree(5, 0);
  for (const auto& e : s) ++degree[static_cast<std::size_t>(e.first)];
  const fs::path dir = tmp.path() / "d";
  write_cache(cpu(), ds, dir, "abc");
  for (const char* f : {"graph.indptr.bin", "graph.indices.bin", "labels.bin"}) fs::remove(dir / f);
  const auto c = read_cache_counts(dir);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->name, ds.name);
  EXPECT_EQ(c->num_nodes, 5);
  EXPECT_EQ(c->num_edges, static_cast<std::int64_t>(entries.size()));
  EXPECT_EQ(c->training_edges, static_cast<std::int64_t>(s.size()));
  EXPECT_EQ(c->max_degree, *std::max_element(degree.begin(), degree.end()));
  EXPECT_EQ(c->num_features, ds.num_features());
  EXPECT_EQ(c->num_classes, ds.num_classes);
  EXPECT_EQ(c->num_train, ds.train_idx.numel());
  EXPECT_EQ(c->num_val, ds.val_idx.numel());
  EXPECT_EQ(c->num_test, ds.test_idx.numel());
  EXPECT_FALSE(c->weighted);
  // S's rows by degree, in log2 buckets ({rows, degree sum}), counted by hand.
  DegreeHistogram h;
  for (const std::int64_t d : degree) {
    std::size_t b = 0;  // the bucket whose range [2^(b-1), 2^b) holds d
    while (d >= (std::int64_t{1} << b)) ++b;
    if (h.size() <= b) h.resize(b + 1, {0, 0});
    ++h[b][0];
    h[b][1] += d;
  }
  EXPECT_EQ(c->degree_histogram, h);
  EXPECT_TRUE(degree_histogram_covers(h, 5, c->training_edges));
  EXPECT_FALSE(degree_histogram_covers(h, 4, c->training_edges));
  EXPECT_FALSE(degree_histogram_covers({{-1, 0}, {6, c->training_edges}}, 5, c->training_edges));
  // An entry written before the histogram has none; one that does not cover S is corrupt.
  replace_in_file(dir / "meta.json", "\"degree_histogram\"", "\"old_histogram\"");
  EXPECT_TRUE(read_cache_counts(dir)->degree_histogram.empty());
  replace_in_file(dir / "meta.json", "\"old_histogram\"", "\"degree_histogram\": [[5, 1]], \"x\"");
  EXPECT_THROW(read_cache_counts(dir), IoError);
  replace_in_file(dir / "meta.json", "\"degree_histogram\": [[5, 1]], \"x\"",
                  "\"degree_histogram\"");
  // An entry of another format version has no counts (loading rebuilds it); none, neither.
  replace_in_file(dir / "meta.json", "\"format_version\": " + std::to_string(kCacheFormatVersion),
                  "\"format_version\": 1");
  EXPECT_FALSE(read_cache_counts(dir).has_value());
  EXPECT_FALSE(read_cache_counts(tmp.path() / "none").has_value());
  write_text(dir / "meta.json", "{");
  EXPECT_THROW(read_cache_counts(dir), IoError);
}

TEST(Cache, CorruptEntriesAreErrors) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "d";
  write_cache(cpu(), tiny_dataset(), dir, "abc");
  // A truncated array file.
  std::string labels = read_file(dir / "labels.bin");
  write_text(dir / "labels.bin", labels.substr(0, labels.size() - 1));
  std::string msg = error_of(dir, "abc");
  EXPECT_NE(msg.find("labels.bin: corrupt cache entry"), std::string::npos) << msg;
  write_text(dir / "labels.bin", labels);
  EXPECT_TRUE(read_cache(cpu(), dir, "abc").has_value());
  // A label out of range.
  std::string bad = labels;
  bad[0] = 9;
  write_text(dir / "labels.bin", bad);
  msg = error_of(dir, "abc");
  EXPECT_NE(msg.find("corrupt cache entry"), std::string::npos) << msg;
  write_text(dir / "labels.bin", labels);
  // meta.json that is not JSON, and one whose sizes disagree.
  const std::string meta = read_file(dir / "meta.json");
  write_text(dir / "meta.json", meta.substr(0, meta.size() / 2));
  msg = error_of(dir, "abc");
  EXPECT_NE(msg.find("meta.json: corrupt cache entry"), std::string::npos) << msg;
  write_text(dir / "meta.json", meta);
  replace_in_file(dir / "meta.json", "\"num_nodes\": 5", "\"num_nodes\": 6");
  msg = error_of(dir, "abc");
  EXPECT_NE(msg.find("corrupt cache entry"), std::string::npos) << msg;
  write_text(dir / "meta.json", meta);
  fs::remove(dir / "test_idx.bin");
  msg = error_of(dir, "abc");
  EXPECT_NE(msg.find("test_idx.bin: cannot open"), std::string::npos) << msg;
}

}  // namespace
}  // namespace halo::datasets::test
