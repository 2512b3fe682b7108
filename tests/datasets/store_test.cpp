// The graph store: round trips (copied and mapped, f32 / f16 / bf16 features), the header alone,
// refused versions and corrupt stores; the streamed CSR builder and R-MAT under tiny budgets.

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include <halo/datasets/generators/rmat.hpp>
#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/readers/numpy.hpp>
#include <halo/datasets/readers/ogb_binary.hpp>
#include <halo/datasets/readers/plain_format.hpp>
#include <halo/datasets/readers/planetoid.hpp>
#include <halo/datasets/store/csr_builder.hpp>
#include <halo/datasets/store/store.hpp>
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

/// The entries of a directory.
std::ptrdiff_t entries_in(const fs::path& dir) {
  return std::distance(fs::directory_iterator(dir), fs::directory_iterator());
}

/// Every file of store `a` equals the one of the same name in store `b`, byte for byte.
void expect_same_files(const fs::path& a, const fs::path& b) {
  EXPECT_EQ(entries_in(a), entries_in(b));
  for (const auto& e : fs::directory_iterator(a))
    EXPECT_EQ(read_file(e.path()), read_file(b / e.path().filename())) << e.path();
}

std::string error_of(const fs::path& dir, const StoreOpenOptions& o = {}) {
  try {
    open_store(cpu(), dir, o);
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

/// This process's resident set in bytes (/proc/self/statm).
std::int64_t resident_bytes() {
  std::ifstream in("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

// The trimmer gives the pages a pass touched in a mapped graph back to the page cache, at once
// (trim) or every period, and leaves the data intact and memory that is not a mapping alone.
TEST(Store, MappedPageTrimmerDropsTouchedPagesFromTheResidentSet) {
  TempDir tmp;
  const std::int64_t n = std::int64_t{16} << 20;  // 64 MiB of int32
  const fs::path file = tmp.path() / "indices.bin";
  {
    std::vector<NodeId> block(std::size_t{1} << 20);
    std::ofstream out(file, std::ios::binary);
    for (std::int64_t b = 0; b < n; b += static_cast<std::int64_t>(block.size())) {
      std::iota(block.begin(), block.end(), static_cast<NodeId>(b));
      out.write(reinterpret_cast<const char*>(block.data()),
                static_cast<std::streamsize>(block.size() * sizeof(NodeId)));
    }
  }
  Graph g;
  g.indices = kernels::Tensor<NodeId>(
      kernels::Buffer::map_file(file.string(), static_cast<std::size_t>(n) * 4), n);
  const auto touch = [&] {
    std::int64_t sum = 0;
    for (std::int64_t i = 0; i < n; i += 1024) sum += g.indices.data()[i];
    return sum;
  };
  std::int64_t want = 0;
  for (std::int64_t i = 0; i < n; i += 1024) want += i;
  ASSERT_EQ(mapped_ranges(g).size(), 1u);
  const std::int64_t before = resident_bytes();
  EXPECT_EQ(touch(), want);
  EXPECT_GT(resident_bytes() - before, std::int64_t{48} << 20) << "the pass maps its pages in";
  MappedPageTrimmer(mapped_ranges(g), std::chrono::milliseconds(0)).trim();
  EXPECT_LT(resident_bytes() - before, std::int64_t{16} << 20);
  {
    const MappedPageTrimmer every(mapped_ranges(g), std::chrono::milliseconds(5));
    EXPECT_EQ(touch(), want) << "the data survive";
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_LT(resident_bytes() - before, std::int64_t{16} << 20);
  }
  // Reading at random through the file (Buffer::read_file) gives the same values and maps no
  // page: through the mapping, every touch maps a page-cache folio (up to 2 MiB) around it.
  MappedPageTrimmer(mapped_ranges(g), std::chrono::milliseconds(0)).trim();
  const std::int64_t trimmed = resident_bytes();
  std::int64_t sum = 0;
  NodeId row[4];
  for (std::int64_t i = 4093; i < n - 4; i += 4099) {
    g.indices.storage().read_file(static_cast<std::size_t>(i) * 4, row, sizeof row);
    for (int j = 0; j < 4; ++j) ASSERT_EQ(row[j], i + j);
    sum += row[0];
  }
  EXPECT_GT(sum, 0);
  EXPECT_LT(resident_bytes() - trimmed, std::int64_t{4} << 20);
  EXPECT_THROW(g.indices.storage().read_file(static_cast<std::size_t>(n) * 4 - 2, row, 4),
               LogicError);
  Graph in_memory;
  in_memory.indices = kernels::Tensor<NodeId>::from_host(cpu(), std::vector<NodeId>(1024, 7));
  EXPECT_TRUE(mapped_ranges(in_memory).empty());
  EXPECT_THROW(in_memory.indices.storage().read_file(0, row, 4), LogicError);
}

// A mapped file cut short under the process (another program truncating a store in use): the
// read of a page past the new end stops the process with one line naming the file and status 1
// (install_mapping_fault_handler), not a crash; the pages before the end still read.
TEST(StoreDeathTest, AMappedFileCutShortStopsTheProcessNamingIt) {
  TempDir tmp;
  const fs::path file = tmp.path() / "graph.indices.bin";
  const std::size_t bytes = std::size_t{1} << 20;
  {
    const std::vector<char> zeros(bytes, 7);
    std::ofstream(file, std::ios::binary).write(zeros.data(), static_cast<std::streamsize>(bytes));
  }
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_EXIT(
      {
        kernels::install_mapping_fault_handler();
        const kernels::Buffer b = kernels::Buffer::map_file(file.string(), bytes);
        fs::resize_file(file, 4096);
        const volatile char* p = static_cast<const char*>(b.data());
        if (p[100] != 7) std::exit(3);         // before the new end: still the data
        std::exit(p[bytes / 2] == 7 ? 4 : 5);  // past it: SIGBUS
      },
      ::testing::ExitedWithCode(1), "halo: error: .*graph.indices.bin: the file shrank");
}

// The check of the mappings (every training step calls it): nothing while the files are the
// mapped ones, then an IoError naming a file that is cut short, replaced or removed.
TEST(Store, TheMappingCheckNamesAFileShrunkReplacedOrRemoved) {
  TempDir tmp;
  const auto write = [](const fs::path& file, std::size_t bytes) {
    const std::vector<char> data(bytes, 7);
    std::ofstream(file, std::ios::binary).write(data.data(), static_cast<std::streamsize>(bytes));
  };
  const auto expect_error = [](const std::string& text) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));  // past the checks' period
    try {
      kernels::check_mapped_files();
      ADD_FAILURE() << "no error, expected " << text;
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  const fs::path file = tmp.path() / "features.bin";
  for (const std::string change : {"shrunk", "replaced", "removed"}) {
    SCOPED_TRACE(change);
    write(file, 8192);
    const kernels::Buffer b = kernels::Buffer::map_file(file.string(), 8192);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    EXPECT_NO_THROW(kernels::check_mapped_files());
    if (change == "shrunk") {
      fs::resize_file(file, 4096);
      expect_error("features.bin: the file shrank while this run read it (4096 bytes, 8192");
    } else if (change == "replaced") {
      write(tmp.path() / "new", 8192);
      fs::rename(tmp.path() / "new", file);
      expect_error("features.bin: the file was replaced during the run");
    } else {
      fs::remove(file);
      expect_error("features.bin: the file was removed or renamed during the run");
    }
  }
  // Unmapped, the file is no longer checked.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_NO_THROW(kernels::check_mapped_files());
}

TEST(Store, RoundTripsDenseAndWeightedCopiedOrMapped) {
  TempDir tmp;
  Dataset ds = tiny_dataset();
  ds.graph = make_graph(5, {{0, 1}, {1, 0}, {2, 1}}, {0.5f, 2.0f, -1.0f});
  const fs::path dir = tmp.path() / "c" / "tiny";
  write_store(cpu(), ds, dir, "sha-1");
  EXPECT_TRUE(is_store(dir));
  EXPECT_EQ(read_store_source(dir), "sha-1");
  for (const bool mapped : {false, true}) {
    const Dataset got = open_store(cpu(), dir, {.mapped = mapped});
    expect_same(got, ds);
    EXPECT_EQ(got.graph.indices.mapped(), mapped);
    EXPECT_EQ(std::get<kernels::Tensor<float>>(got.features).mapped(), mapped);
  }
}

// A mapped store is copy-on-write: a run that changes its arrays in memory leaves the files alone.
TEST(Store, WritesToAMappedStoreStayInTheProcess) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "d";
  write_store(cpu(), tiny_dataset(), dir, "");
  const std::string before = read_file(dir / "features.bin");
  {
    Dataset got = open_store(cpu(), dir, {.mapped = true});
    auto& x = std::get<kernels::Tensor<float>>(got.features);
    for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] = 7.0f;
  }
  EXPECT_EQ(read_file(dir / "features.bin"), before);
  EXPECT_NO_THROW(open_store(cpu(), dir));
}

TEST(Store, RoundTripsCoraAndReplacesOldStores) {
  TempDir tmp;
  const fs::path raw = halo::testing::datasets_dir() / "planetoid" / "raw";
  const Dataset cora = read_planetoid(cpu(), raw, "cora");
  const fs::path dir = tmp.path() / "cora";
  write_store(cpu(), tiny_dataset(), dir, "old");
  write_store(cpu(), cora, dir, "new");
  EXPECT_EQ(read_store_source(dir), "new");
  expect_same(open_store(cpu(), dir), cora);
  expect_same(open_store(cpu(), dir, {.mapped = true}), cora);
  // Nothing but the store is left beside it.
  const auto entries = entries_in(tmp.path());
  EXPECT_EQ(entries, 1);
}

// Narrow feature rows: each value is what the conversion gives, and the conversions are exact on
// the values the narrow types hold (round to nearest even in between).
TEST(Store, NarrowFeaturesConvertOnOpen) {
  EXPECT_EQ(from_f16(to_f16(1.0f)), 1.0f);
  EXPECT_EQ(from_f16(to_f16(-2.5f)), -2.5f);
  EXPECT_EQ(from_f16(to_f16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(from_f16(to_f16(1e6f))));
  EXPECT_EQ(from_f16(to_f16(5.9604645e-8f)), 5.9604645e-8f);  // the smallest subnormal
  EXPECT_EQ(from_f16(to_f16(0.0f)), 0.0f);
  EXPECT_TRUE(std::isnan(from_f16(to_f16(std::nanf("")))));
  EXPECT_EQ(from_f16(to_f16(1.0f + 1.0f / 2048)), 1.0f);  // a tie: to even
  EXPECT_EQ(from_f16(to_f16(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);
  EXPECT_EQ(from_bf16(to_bf16(1.0f)), 1.0f);
  EXPECT_EQ(from_bf16(to_bf16(-3.0e38f)), -226.0f / 128 * 0x1p127f);    // 8 significant bits
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 3.0f / 256)), 1.0f + 2.0f / 128);  // a tie: to even
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 1.0f / 256)), 1.0f);               // a tie: to even
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(std::nanf("")))));
  // Every f16 value survives the round trip.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float x = from_f16(static_cast<std::uint16_t>(h));
    if (!std::isnan(x)) {
      EXPECT_EQ(to_f16(x), h) << h;
    }
  }

  TempDir tmp;
  const Dataset ds = tiny_dataset();
  const auto& x = std::get<kernels::Tensor<float>>(ds.features);
  for (const FeatureDtype d : {FeatureDtype::F16, FeatureDtype::BF16}) {
    const fs::path dir = tmp.path() / feature_dtype_name(d);
    write_store(cpu(), ds, dir, "", d);
    EXPECT_EQ(read_store_counts(dir).feature_dtype, d);
    EXPECT_EQ(fs::file_size(dir / "features.bin"), static_cast<std::uintmax_t>(x.numel()) * 2);
    const Dataset got = open_store(cpu(), dir);
    const auto& y = std::get<kernels::Tensor<float>>(got.features);
    ASSERT_EQ(y.rows(), x.rows());
    ASSERT_EQ(y.cols(), x.cols());
    for (std::int64_t i = 0; i < x.numel(); ++i)
      EXPECT_EQ(y.data()[i], d == FeatureDtype::F16 ? from_f16(to_f16(x.data()[i]))
                                                    : from_bf16(to_bf16(x.data()[i])));
  }
  EXPECT_EQ(parse_feature_dtype("bf16"), FeatureDtype::BF16);
  EXPECT_FALSE(parse_feature_dtype("f64").has_value());
}

// halo plan's counts: the training graph S = A ∪ Aᵀ without self-loops, counted by brute force
// here, and read back from the header alone (sizes are checked, contents not).
TEST(Store, CountsOfTheTrainingGraphComeFromTheHeader) {
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
  write_store(cpu(), ds, dir, "abc");
  write_text(dir / "labels.bin", std::string(5 * 4, '\x7f'));  // labels out of range: unread
  const StoreCounts c = read_store_counts(dir);
  EXPECT_EQ(c.name, ds.name);
  EXPECT_EQ(c.num_nodes, 5);
  EXPECT_EQ(c.num_edges, static_cast<std::int64_t>(entries.size()));
  EXPECT_EQ(c.training_edges, static_cast<std::int64_t>(s.size()));
  EXPECT_EQ(c.max_degree, *std::max_element(degree.begin(), degree.end()));
  EXPECT_EQ(c.num_features, ds.num_features());
  EXPECT_EQ(c.num_classes, ds.num_classes);
  EXPECT_EQ(c.num_train, ds.train_idx.numel());
  EXPECT_EQ(c.num_val, ds.val_idx.numel());
  EXPECT_EQ(c.num_test, ds.test_idx.numel());
  EXPECT_FALSE(c.weighted);
  std::uintmax_t bytes = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".bin") bytes += fs::file_size(e.path());
  EXPECT_EQ(c.bytes_on_disk, bytes);
  // S's rows by degree, in log2 buckets ({rows, degree sum}), counted by hand.
  DegreeHistogram h;
  for (const std::int64_t d : degree) {
    std::size_t b = 0;  // the bucket whose range [2^(b-1), 2^b) holds d
    while (d >= (std::int64_t{1} << b)) ++b;
    if (h.size() <= b) h.resize(b + 1, {0, 0});
    ++h[b][0];
    h[b][1] += d;
  }
  EXPECT_EQ(c.degree_histogram, h);
  EXPECT_TRUE(degree_histogram_covers(h, 5, c.training_edges));
  EXPECT_FALSE(degree_histogram_covers(h, 4, c.training_edges));
  EXPECT_FALSE(degree_histogram_covers({{-1, 0}, {6, c.training_edges}}, 5, c.training_edges));
  // A histogram that does not cover S is corrupt.
  replace_in_file(dir / "store.json", "\"degree_histogram\"",
                  "\"degree_histogram\": [[5, 1]], \"x\"");
  EXPECT_THROW(read_store_counts(dir), IoError);
}

TEST(Store, OtherVersionsMissingHeadersAndCorruptStoresAreErrorsNamingTheFile) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "d";
  write_store(cpu(), tiny_dataset(), dir, "abc");
  const std::string header = read_file(dir / "store.json");
  auto expect_error = [&](const std::string& what, const StoreOpenOptions& o = {}) {
    const std::string msg = error_of(dir, o);
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  };
  // Another format version (an old binary cache, or a newer build's store).
  replace_in_file(dir / "store.json", "\"format_version\": " + std::to_string(kStoreFormatVersion),
                  "\"format_version\": 2");
  expect_error("store.json: store format version 2, this build reads version 3");
  EXPECT_THROW(read_store_counts(dir), IoError);
  write_text(dir / "store.json", header);
  // A truncated array file, and one longer than the header says.
  const std::string labels = read_file(dir / "labels.bin");
  write_text(dir / "labels.bin", labels.substr(0, labels.size() - 1));
  expect_error((dir / "labels.bin").string() +
               ": corrupt store: the file has 19 bytes, store.json "
               "says 20 (truncated)");
  EXPECT_THROW(read_store_counts(dir), IoError);
  write_text(dir / "labels.bin", labels + "x");
  expect_error("labels.bin: corrupt store: the file has 21 bytes");
  // Corrupted contents: the CRC-32 tells, copied or mapped; unchecked, validate does.
  std::string bad = labels;
  bad[0] = 9;
  write_text(dir / "labels.bin", bad);
  for (const bool mapped : {false, true})
    expect_error("labels.bin: corrupt store: CRC-32", {.mapped = mapped});
  expect_error("store.json: corrupt store: ", {.verify_checksums = false});
  write_text(dir / "labels.bin", labels);
  EXPECT_NO_THROW(open_store(cpu(), dir));
  // A header that is not JSON, and one whose counts disagree with the file sizes.
  write_text(dir / "store.json", header.substr(0, header.size() / 2));
  expect_error("store.json: corrupt store header");
  write_text(dir / "store.json", header);
  replace_in_file(dir / "store.json", "\"num_nodes\": 5", "\"num_nodes\": 6");
  expect_error("store.json: corrupt store header: degree_histogram does not cover");
  write_text(dir / "store.json", header);
  const std::string edges = "\"num_edges\": " + std::to_string(read_store_counts(dir).num_edges);
  replace_in_file(dir / "store.json", edges, "\"num_edges\": 1");
  expect_error("store.json: corrupt store: the array sizes disagree with the header's counts");
  write_text(dir / "store.json", header);
  fs::remove(dir / "test_idx.bin");
  expect_error("test_idx.bin: cannot open");
  // No header: a build that did not finish, or not a store.
  fs::remove(dir / "store.json");
  EXPECT_FALSE(is_store(dir));
  expect_error("store.json: no store header");
}

// ---- the streamed CSR builder ----

// Random edges with duplicates and self-loops, built under budgets from one entry to everything,
// symmetrised or not: always graph_from_edges + symmetrize / deduplicate + remove_self_loops.
TEST(CsrBuilder, AnyBudgetGivesTheInMemoryGraph) {
  const auto entries = random_entries(300, 4000, 7);
  std::vector<std::pair<NodeId, NodeId>> edges;
  for (const auto& [r, c] : entries) edges.push_back({c, r});
  for (int i = 0; i < 50; ++i) edges.push_back({i, i});  // self-loops
  const EdgeSource source{
      300, [&](const std::function<void(EdgeBatch)>& sink) {
        for (std::size_t at = 0; at < edges.size(); at += 333)
          sink(EdgeBatch(edges.data() + at, std::min<std::size_t>(333, edges.size() - at)));
      }};
  for (const bool sym : {false, true}) {
    const Graph a = graph_from_edges(cpu(), 300, edges);
    const Graph want = remove_self_loops(cpu(), sym ? symmetrize(cpu(), a) : deduplicate(cpu(), a));
    for (const std::size_t budget : {std::size_t{4}, std::size_t{1} << 10, std::size_t{1} << 30}) {
      TempDir tmp;
      StoreWriter w(tmp.path() / "s");
      const CsrBuildResult r =
          build_csr(cpu(), source,
                    {.symmetrize = sym, .remove_self_loops = true, .memory_budget = budget}, &w);
      if (budget == 4) {
        EXPECT_GT(r.blocks, 200);
      }
      if (budget == std::size_t{1} << 30) {
        EXPECT_EQ(r.blocks, 1);
      }
      EXPECT_EQ(r.entries, want.num_edges());
      EXPECT_EQ(r.histogram, degree_histogram(want.indptr.data(), 300));
      EXPECT_EQ(
          read_file(w.scratch_dir() / "graph.indptr.bin"),
          std::string(reinterpret_cast<const char*>(want.indptr.data()), want.indptr.bytes()));
      EXPECT_EQ(
          read_file(w.scratch_dir() / "graph.indices.bin"),
          std::string(reinterpret_cast<const char*>(want.indices.data()), want.indices.bytes()));
    }
  }
  // An id out of range names the edge.
  std::vector<std::pair<NodeId, NodeId>> bad = {{0, 1}, {3, 300}};
  const EdgeSource bad_source{300, [&](const std::function<void(EdgeBatch)>& sink) { sink(bad); }};
  TempDir tmp;
  StoreWriter w(tmp.path() / "s");
  EXPECT_THROW(build_csr(cpu(), bad_source, {}, &w), IoError);
}

// ---- R-MAT streamed into a store ----

RmatConfig small_rmat() {
  RmatConfig c;
  c.scale = 11;
  c.avg_degree = 12;
  c.num_features = 24;
  return c;
}

// The store prepare_rmat writes is make_rmat's dataset, bit for bit, under a budget far below the
// graph (many row blocks, many spill batches) or none; the files are the same whatever the budget.
TEST(Store, StreamedRmatEqualsTheInMemoryGeneratorUnderAnyBudget) {
  TempDir tmp;
  const Dataset want = make_rmat(cpu(), small_rmat());
  const PrepareReport big = prepare_rmat(cpu(), small_rmat(), tmp.path() / "big",
                                         {.memory_budget = std::size_t{1} << 30});
  const PrepareReport small =
      prepare_rmat(cpu(), small_rmat(), tmp.path() / "small", {.memory_budget = 16 << 10});
  EXPECT_EQ(big.row_blocks, 1);
  EXPECT_GT(small.row_blocks, 4);
  EXPECT_EQ(small.spill_bytes, std::uint64_t{8} * (2048 * 12 / 2));  // 8 bytes a drawn edge
  Dataset got = open_store(cpu(), tmp.path() / "small");
  got.graph.symmetric = want.graph.symmetric;
  expect_same(got, want);
  EXPECT_TRUE(got.graph.symmetric);
  expect_same_files(tmp.path() / "big", tmp.path() / "small");
  // The header's training-graph counts are those write_store computes in memory.
  const StoreCounts c = read_store_counts(tmp.path() / "small");
  const TrainingGraphStats s = training_graph_stats(cpu(), want.graph);
  EXPECT_EQ(c.training_edges, s.entries);
  EXPECT_EQ(c.max_degree, s.max_degree);
  EXPECT_EQ(c.degree_histogram, s.histogram);
  // Nothing else is left beside the stores (no spill, no temporary directory).
  const auto entries = entries_in(tmp.path());
  EXPECT_EQ(entries, 2);
}

// A bare edge list streamed into a store is what read_directory reads (directed, duplicates merged,
// self-loops kept, isolated nodes from meta.tsv), whatever the budget; its header carries the
// training graph's statistics.
TEST(Store, StreamedBareGraphEqualsTheInMemoryReader) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "web";
  fs::create_directories(dir);
  std::string edges;
  for (const auto& [r, c] : random_entries(500, 3000, 11))
    edges += std::to_string(c) + "\t" + std::to_string(r) + "\n";
  write_text(dir / "edges.tsv", edges);
  write_text(dir / "meta.tsv", "num_nodes\t520\n");
  const Dataset want = read_directory(cpu(), dir);
  const PrepareReport small =
      prepare_bare_graph(cpu(), dir, tmp.path() / "small", {.memory_budget = 4096});
  const PrepareReport big = prepare_bare_graph(cpu(), dir, tmp.path() / "big", {});
  EXPECT_GT(small.row_blocks, 2);
  EXPECT_EQ(big.row_blocks, 1);
  expect_same(open_store(cpu(), tmp.path() / "small"), want);
  expect_same_files(tmp.path() / "big", tmp.path() / "small");
  const TrainingGraphStats s = training_graph_stats(cpu(), want.graph);
  EXPECT_EQ(small.counts.training_edges, s.entries);
  EXPECT_EQ(small.counts.max_degree, s.max_degree);
  EXPECT_EQ(small.counts.degree_histogram, s.histogram);
  EXPECT_EQ(small.counts.num_nodes, 520);
  // Not a bare graph: refused by name; a malformed line names its file and line.
  write_text(dir / "labels.txt", "0\n");
  EXPECT_FALSE(is_bare_graph(dir));
  EXPECT_THROW(prepare_bare_graph(cpu(), dir, tmp.path() / "x", {}), IoError);
  fs::remove(dir / "labels.txt");
  write_text(dir / "edges.tsv", "0\t1\n2 3\n");
  try {
    prepare_bare_graph(cpu(), dir, tmp.path() / "x", {});
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("edges.tsv:2: expected two non-negative integer"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(tmp.path() / "x"));
}

/// An OGB binary-layout directory (ogbn-papers100M's) of `n` nodes: deflated .npz members, gzipped
/// splits; a few nodes unlabeled (NaN), a few duplicate edges and self-loops.
void write_ogb_binary(const fs::path& root, std::int64_t n, std::int64_t m, int f) {
  fs::create_directories(root / "raw");
  fs::create_directories(root / "split" / "time");
  std::mt19937_64 gen(5);
  NpyArray edges{"<i8", {2, m}, std::string(static_cast<std::size_t>(2 * m) * 8, '\0')};
  for (std::int64_t i = 0; i < 2 * m; ++i) {
    const auto v = static_cast<std::int64_t>(gen() % static_cast<std::uint64_t>(n));
    std::memcpy(edges.bytes.data() + i * 8, &v, 8);
  }
  NpyArray feat{"<f4", {n, f}, std::string(static_cast<std::size_t>(n * f) * 4, '\0')};
  for (std::int64_t i = 0; i < n * f; ++i) {
    const float v = static_cast<float>(gen() % 1000) / 7.0f - 50.0f;
    std::memcpy(feat.bytes.data() + i * 4, &v, 4);
  }
  NpyArray nodes{"<i8", {1}, std::string(8, '\0')};
  std::memcpy(nodes.bytes.data(), &n, 8);
  NpyArray label{"<f8", {n, 1}, std::string(static_cast<std::size_t>(n) * 8, '\0')};
  std::string train, valid, test;
  for (std::int64_t v = 0; v < n; ++v) {
    const double c = v % 7 == 3 ? std::nan("") : static_cast<double>(gen() % 5);
    std::memcpy(label.bytes.data() + v * 8, &c, 8);
    if (std::isnan(c)) continue;
    (v % 5 == 0   ? train
     : v % 5 == 1 ? valid
     : v % 5 == 2 ? test
                  : train) += v % 5 <= 2 ? std::to_string(v) + "\n" : "";
  }
  write_zip(root / "raw" / "data.npz", {{"edge_index.npy", npy_bytes(edges)},
                                        {"node_feat.npy", npy_bytes(feat)},
                                        {"num_nodes_list.npy", npy_bytes(nodes)}});
  write_zip(root / "raw" / "node-label.npz", {{"node_label.npy", npy_bytes(label)}});
  write_gz(root / "split" / "time" / "train.csv.gz", train);
  write_gz(root / "split" / "time" / "valid.csv.gz", valid);
  write_gz(root / "split" / "time" / "test.csv.gz", test);
}

// ogbn-papers100M's reader streams: the arrays are read front to back from the deflated members
// under a budget far below them, and the store equals the in-memory reader's dataset.
TEST(Store, StreamedOgbBinaryEqualsTheInMemoryReader) {
  TempDir tmp;
  const fs::path root = tmp.path() / "papers";
  write_ogb_binary(root, 3000, 40000, 24);  // 640 KiB of edges, 288 KiB of features
  const Dataset want = read_ogb_node_binary(cpu(), root);
  const PrepareReport small =
      prepare_ogb_node_binary(cpu(), root, tmp.path() / "small", {.memory_budget = 16 << 10});
  const PrepareReport big = prepare_ogb_node_binary(cpu(), root, tmp.path() / "big", {});
  EXPECT_GT(small.row_blocks, 4);
  EXPECT_EQ(big.row_blocks, 1);
  expect_same(open_store(cpu(), tmp.path() / "small"), want);
  expect_same_files(tmp.path() / "big", tmp.path() / "small");
  const TrainingGraphStats s = training_graph_stats(cpu(), want.graph);
  EXPECT_EQ(small.counts.training_edges, s.entries);
  EXPECT_EQ(small.counts.degree_histogram, s.histogram);
  // A node id out of range names the archive and the column.
  write_ogb_binary(root, 3000, 40000, 24);
  {
    NpyArray edges{"<i8", {2, 2}, std::string(32, '\0')};
    const std::int64_t ids[4] = {0, 1, 2, 3000};
    std::memcpy(edges.bytes.data(), ids, 32);
    NpyArray nodes{"<i8", {1}, std::string(8, '\0')};
    const std::int64_t n = 3000;
    std::memcpy(nodes.bytes.data(), &n, 8);
    write_zip(root / "raw" / "data.npz",
              {{"edge_index.npy", npy_bytes(edges)}, {"num_nodes_list.npy", npy_bytes(nodes)}});
  }
  try {
    prepare_ogb_node_binary(cpu(), root, tmp.path() / "bad", {});
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("data.npz: edge_index column 1 names a node outside"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(tmp.path() / "bad"));
}

// A build that fails (here: the output's parent is a file) leaves nothing that looks like a store.
TEST(Store, AFailedBuildLeavesNothing) {
  TempDir tmp;
  write_text(tmp.path() / "file", "x");
  EXPECT_THROW(prepare_rmat(cpu(), small_rmat(), tmp.path() / "file" / "s", {}), IoError);
  {
    StoreWriter w(tmp.path() / "s");
    w.array("labels", tensor<std::int32_t>({1, 2}));
    EXPECT_TRUE(fs::exists(w.scratch_dir()));
  }  // never committed
  const auto entries = entries_in(tmp.path());
  EXPECT_EQ(entries, 1);
  EXPECT_FALSE(is_store(tmp.path() / "s"));
}

}  // namespace
}  // namespace halo::datasets::test
