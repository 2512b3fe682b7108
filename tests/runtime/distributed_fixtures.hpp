#pragma once
// Data the MPI test executables share: a partition of a homogeneous dataset that every rank
// reads (SharedPartition), a partitioned heterogeneous graph (write_hetero_partition), and
// temporal events for link prediction (link_events), each on directed and undirected variants.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <halo/datasets/hetero.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/datasets/temporal.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/partition/partitioners/partitioner.hpp>
#include <halo/runtime/comm/comm.hpp>

#include "runtime/runtime_test_util.hpp"
#include "support/hetero_fixture.hpp"

namespace halo::runtime::test {

/// Every rank partitions `ds` into `parts` parts (0: comm.size(); METIS is deterministic for a
/// seed, so every rank holds the same relabelling); rank 0 writes it under a fresh directory
/// HALO_TEST_BINARY_DIR/part-<name>-<P> that all ranks read. `store`: rank 0 first writes `ds`
/// as a store (float32 features) to that name + "-store", and the parts reference its features
/// instead of holding them (as `halo partition --dataset STORE` writes). The directories are
/// removed when the object dies (collective).
class SharedPartition {
 public:
  SharedPartition(Comm& comm, const datasets::Dataset& ds, partition::Method method,
                  const std::string& name, bool store = false, std::int32_t parts = 0)
      : m_comm(comm),
        m_dir(std::filesystem::path(HALO_TEST_BINARY_DIR) /
              ("part-" + name + "-" + std::to_string(comm.size()))),
        m_store(store ? m_dir.string() + "-store" : std::string()) {
    partition::PartitionConfig c;
    c.num_parts = parts > 0 ? parts : comm.size();
    c.method = method;
    c.seed = 7;
    m_result = partition::partition_dataset(host(), ds, c);
    if (comm.rank() == 0) {
      std::filesystem::remove_all(m_dir);
      if (store) {
        std::filesystem::remove_all(m_store);
        datasets::write_store(host(), ds, m_store, "");
        const datasets::StoredFeatures f = datasets::stored_features(m_store);
        partition::write_partitions(host(), ds, m_result, m_dir, {}, &f);
      } else {
        partition::write_partitions(host(), ds, m_result, m_dir);
      }
    }
    comm.barrier();
    m_meta = partition::read_partition_meta(m_dir);
  }
  SharedPartition(const SharedPartition&) = delete;
  SharedPartition& operator=(const SharedPartition&) = delete;
  ~SharedPartition() {
    m_comm.barrier();
    if (m_comm.rank() == 0) {
      std::filesystem::remove_all(m_dir);
      if (!m_store.empty()) std::filesystem::remove_all(m_store);
    }
  }
  const std::filesystem::path& dir() const { return m_dir; }
  /// The store the parts reference (empty without one).
  const std::filesystem::path& store() const { return m_store; }
  const partition::PartitionMeta& meta() const { return m_meta; }
  /// Original id of partition id v.
  kernels::NodeId original(kernels::NodeId v) const {
    return m_result.relabelling.new_to_old[static_cast<std::size_t>(v)];
  }

 private:
  Comm& m_comm;
  std::filesystem::path m_dir;
  std::filesystem::path m_store;  // empty: the parts hold their rows
  partition::PartitionResult m_result;
  partition::PartitionMeta m_meta;
};

/// `ds` with its features as a dense matrix (a store's features are dense).
inline datasets::Dataset with_dense_features(const datasets::Dataset& ds) {
  datasets::Dataset d = ds.clone(host());
  if (const auto* x = std::get_if<kernels::CsrMatrix<std::int32_t, float>>(&ds.features)) {
    kernels::Tensor<float> dense(host(), x->num_rows(), x->num_cols);
    std::fill_n(dense.data(), dense.numel(), 0.f);
    for (std::int64_t r = 0; r < x->num_rows(); ++r)
      for (std::int64_t e = x->indptr.data()[r]; e < x->indptr.data()[r + 1]; ++e)
        dense.data()[r * x->num_cols + x->indices.data()[e]] =
            x->values.empty() ? 1.f : x->values.data()[e];
    d.features = std::move(dense);
  }
  return d;
}

/// The 4-type fixture (tests/support/hetero_fixture.hpp, its user -> user relation one-way) in
/// `dir`; `undirected` adds the reverse of every 'follows' edge, so that relation is symmetric.
inline void write_hetero_graph(const std::filesystem::path& dir, bool undirected) {
  std::filesystem::create_directories(dir);
  const halo::testing::HeteroFixture f = halo::testing::write_hetero_fixture(dir);
  if (!undirected) return;
  std::set<std::pair<int, int>> follows;
  for (const auto& [a, b] : f.edges[3]) {
    follows.emplace(a, b);
    follows.emplace(b, a);
  }
  std::ofstream(dir / "edges_follows.tsv") << [&] {
    std::string text;
    for (const auto& [a, b] : follows) text += std::to_string(a) + "\t" + std::to_string(b) + "\n";
    return text;
  }();
  std::ofstream(dir / "edge_types.tsv")
      << "# relation\tsrc_type\tdst_type\tfile\tnum_edges\n"
      << "buys\tuser\titem\tedges_buys.tsv\t" << f.edges[0].size() << "\n"
      << "tagged\titem\ttag\tedges_tagged.tsv\t" << f.edges[1].size() << "\n"
      << "sells\tshop\titem\tedges_sells.tsv\t" << f.edges[2].size() << "\n"
      << "follows\tuser\tuser\tedges_follows.tsv\t" << follows.size() << "\n";
}

/// Rank 0 writes `dir`/data (write_hetero_graph) and its partition `dir`/parts into comm.size()
/// parts; every rank returns once they are written.
inline void write_hetero_partition(Comm& comm, const std::filesystem::path& dir, bool undirected) {
  if (comm.rank() == 0) {
    std::filesystem::remove_all(dir);
    write_hetero_graph(dir / "data", undirected);
    partition::PartitionConfig c;
    c.num_parts = comm.size();
    const datasets::HeteroGraph g = datasets::read_hetero_directory(host(), dir / "data");
    partition::write_hetero_partitions(host(), g, partition::partition_hetero(host(), g, c),
                                       dir / "parts");
  }
  comm.barrier();
}

/// Events over 24 steps among 30 nodes (ids 5, 9, 13, ...): a few hubs that message leaves of
/// their own, repeated with drift, plus random pairs; `reciprocal` adds each event's reverse
/// (an undirected graph's events).
inline datasets::TemporalGraph link_events(bool reciprocal) {
  std::vector<datasets::RawTemporalEvent> events;
  std::uint64_t x = 777;
  const auto next = [&] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x >> 33;
  };
  for (std::int64_t t = 0; t < 24; ++t)
    for (int k = 0; k < 14; ++k) {
      const std::int64_t hub = static_cast<std::int64_t>(next() % 3);
      const std::int64_t leaf = 3 + static_cast<std::int64_t>((hub * 9 + next() % 9 + t / 6) % 27);
      std::int64_t a = hub, b = leaf;
      if (k % 4 == 3)
        a = static_cast<std::int64_t>(next() % 30), b = static_cast<std::int64_t>(next() % 30);
      events.push_back({5 + 4 * b, 5 + 4 * a, 1000 + 10 * t, 0});
      if (reciprocal) events.push_back({5 + 4 * a, 5 + 4 * b, 1000 + 10 * t, 0});
    }
  return datasets::make_temporal_graph(events, false, reciprocal ? "undirected" : "directed");
}

}  // namespace halo::runtime::test
