// Distributed training, run by ctest under mpiexec -n 1, 2 and 4: communicator calls (messages
// past MPI's int counts included), the halo exchange against single-process products, the
// sampler over RemoteNeighbors against one process's sampler, whole training runs against one
// process on Cora and on a directed Cora, full graph and mini-batch, and no allocation per batch.
// Suites named *Cuda* run GPU ranks (NCCL) and skip without a device; ctest runs them as the
// separate distributed_cuda_np* entries.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/spmm.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/partition/partitioners/partitioner.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/comm/nccl_comm.hpp>
#include <halo/runtime/data/halo_exchange.hpp>
#include <halo/runtime/data/remote_neighbors.hpp>
#include <halo/runtime/engine/checkpoint.hpp>
#include <halo/runtime/runtime.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

#include "runtime/distributed_fixtures.hpp"
#include "runtime/mpi_test_main.hpp"
#include "runtime/runtime_test_util.hpp"
#include "sampler/allocation_counter.hpp"

namespace halo::runtime {
namespace {

using kernels::NodeId;
using test::cora;
using test::directed_cora;

Comm* g_comm = nullptr;
Comm& comm() { return *g_comm; }

const kernels::Resources& res() { return test::host(); }

using test::SharedPartition;

/// The graph of each test case, by name.
const datasets::Dataset& graph(bool directed) { return directed ? directed_cora() : cora(); }
std::string graph_name(bool directed) { return directed ? "directed" : "undirected"; }

// ---- communicator ----------------------------------------------------------------------------

TEST(Comm, CollectivesAgreeOnEveryRank) {
  const int r = comm().rank(), p = comm().size();
  EXPECT_EQ(comm().sum<std::int64_t>(r + 1), std::int64_t{p} * (p + 1) / 2);
  std::vector<double> v = {static_cast<double>(r), -static_cast<double>(r)};
  comm().allreduce(kernels::Span<double>(v.data(), 2), ReduceOp::Max);
  EXPECT_EQ(v, (std::vector<double>{p - 1.0, 0.0}));

  int root_value = r == 0 ? 42 : -1;
  comm().broadcast(&root_value, sizeof root_value, 0);
  EXPECT_EQ(root_value, 42);

  // Rank r contributes r + 1 bytes of value r.
  std::vector<std::size_t> counts;
  const std::vector<std::byte> mine(static_cast<std::size_t>(r + 1), std::byte(r));
  const std::vector<std::byte> all = comm().allgatherv(mine.data(), mine.size(), counts);
  ASSERT_EQ(counts.size(), static_cast<std::size_t>(p));
  std::size_t at = 0;
  for (int j = 0; j < p; ++j) {
    EXPECT_EQ(counts[static_cast<std::size_t>(j)], static_cast<std::size_t>(j + 1));
    for (int k = 0; k <= j; ++k) EXPECT_EQ(all[at++], std::byte(j));
  }

  // Rank r sends j + 1 copies of (100 r + j) to rank j.
  std::vector<std::int64_t> send_n(static_cast<std::size_t>(p)), send;
  std::vector<std::size_t> send_bytes, recv_bytes;
  for (int j = 0; j < p; ++j) {
    send_n[static_cast<std::size_t>(j)] = j + 1;
    send.insert(send.end(), static_cast<std::size_t>(j + 1), 100 * r + j);
    send_bytes.push_back(static_cast<std::size_t>(j + 1) * sizeof(std::int64_t));
  }
  const std::vector<std::int64_t> recv_n = comm().alltoall(send_n);
  for (const std::int64_t n : recv_n) {
    EXPECT_EQ(n, r + 1);
    recv_bytes.push_back(static_cast<std::size_t>(n) * sizeof(std::int64_t));
  }
  std::vector<std::int64_t> recv(static_cast<std::size_t>(p * (r + 1)));
  comm().alltoallv(send.data(), send_bytes, recv.data(), recv_bytes);
  for (int j = 0; j < p; ++j)
    for (int k = 0; k <= r; ++k)
      EXPECT_EQ(recv[static_cast<std::size_t>(j * (r + 1) + k)], 100 * j + r);
}

TEST(Comm, NonBlockingRingDeliversEveryMessage) {
  const int r = comm().rank(), p = comm().size();
  if (p == 1) GTEST_SKIP() << "a ring needs two ranks";
  std::vector<float> out(1000, static_cast<float>(r)), in(1000, -1.f);
  std::vector<Request> reqs = {
      comm().irecv(in.data(), in.size() * sizeof(float), (r + p - 1) % p, 5),
      comm().isend(out.data(), out.size() * sizeof(float), (r + 1) % p, 5)};
  while (!comm().test_all(reqs)) {
  }
  EXPECT_TRUE(std::all_of(in.begin(), in.end(),
                          [&](float x) { return x == static_cast<float>((r + p - 1) % p); }));
  comm().wait_all(reqs);  // completed requests are inactive: returns at once
}

// Messages past the limit of one MPI count go as derived datatypes (point to point, broadcast),
// in pieces (all-reduce) or point to point (all-to-all, all-gather). A limit of 64 bytes sends
// every payload here that way: they arrive intact.
TEST(Comm, MessagesPastTheCountLimitArriveIntact) {
  auto small = make_world_comm(MpiOptions{64});
  Comm& c = *small;
  const int r = c.rank(), p = c.size();
  std::vector<double> sum(1000);
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = static_cast<double>(r) + 0.5 * i;
  c.allreduce(kernels::Span<double>(sum.data(), 1000), ReduceOp::Sum);
  for (std::size_t i = 0; i < sum.size(); ++i)
    ASSERT_EQ(sum[i], p * (p - 1) / 2.0 + p * 0.5 * i) << "entry " << i;
  std::vector<std::int32_t> b(333, r == 0 ? 7 : -1);
  c.broadcast(b.data(), b.size() * 4, 0);
  EXPECT_TRUE(std::all_of(b.begin(), b.end(), [](std::int32_t x) { return x == 7; }));
  // All-to-all: rank r sends 50 * (j + 1) values 1000 r + j to rank j.
  std::vector<std::vector<std::int32_t>> lists(static_cast<std::size_t>(p));
  for (int j = 0; j < p; ++j)
    lists[static_cast<std::size_t>(j)].assign(50u * (j + 1), 1000 * r + j);
  std::vector<std::int64_t> offsets;
  const std::vector<std::int32_t> got = alltoallv_lists(c, lists, offsets);
  ASSERT_EQ(got.size(), static_cast<std::size_t>(50 * (r + 1) * p));
  for (int j = 0; j < p; ++j)
    for (std::int64_t i = offsets[static_cast<std::size_t>(j)];
         i < offsets[static_cast<std::size_t>(j) + 1]; ++i)
      ASSERT_EQ(got[static_cast<std::size_t>(i)], 1000 * j + r);
  std::vector<std::size_t> counts;
  const std::vector<std::int32_t> mine(100u * (r + 1), r);
  const std::vector<std::byte> all = c.allgatherv(mine.data(), mine.size() * 4, counts);
  std::size_t at = 0;
  for (int j = 0; j < p; ++j) {
    ASSERT_EQ(counts[static_cast<std::size_t>(j)], 400u * (j + 1));
    for (std::size_t k = 0; k < 100u * (j + 1); ++k, at += 4) {
      std::int32_t v = 0;
      std::memcpy(&v, all.data() + at, 4);
      ASSERT_EQ(v, j);
    }
  }
  if (p > 1) {
    std::vector<float> out(5000, static_cast<float>(r)), in(5000, -1.f);
    std::vector<Request> reqs = {c.irecv(in.data(), in.size() * 4, (r + p - 1) % p, 3),
                                 c.isend(out.data(), out.size() * 4, (r + 1) % p, 3)};
    c.wait_all(reqs);
    EXPECT_TRUE(std::all_of(in.begin(), in.end(),
                            [&](float x) { return x == static_cast<float>((r + p - 1) % p); }));
  }
  // A duplicate is another communicator over the same ranks.
  auto dup = c.duplicate();
  EXPECT_EQ(dup->sum<std::int64_t>(1), p);
}

// ---- halo exchange ---------------------------------------------------------------------------

// Rows of the full product Agg(A, x) (one process: gcn_normalize / the mean over A ∪ Aᵀ) and
// its adjoint equal what the ranks compute through their HaloExchange on `run` (CPU or CUDA
// tensors), for both model kinds, with and without overlap, on the directed and the undirected
// graph, for each data communicator (nullptr: rows over comm()). Each halo row crosses once per
// direction: the bytes sent are twice the reported communication volume x width x 4.
void expect_exchange_matches_one_process(const kernels::Resources& run,
                                         const std::vector<Comm*>& data_comms,
                                         const std::string& name) {
  for (const bool directed : {false, true}) {
    SCOPED_TRACE(graph_name(directed));
    const datasets::Dataset& ds = graph(directed);
    const SharedPartition shared(comm(), ds, partition::Method::MetisKway,
                                 name + graph_name(directed));
    const partition::Part part = partition::read_part(res(), shared.dir(), comm().rank());
    const std::int64_t n = ds.num_nodes(), w = 5;
    std::vector<float> x(static_cast<std::size_t>(n * w));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
    const auto x_all = kernels::Tensor<float>::from_host(res(), x, n, w);
    const datasets::Graph sym =
        datasets::remove_self_loops(res(), datasets::symmetrize(res(), ds.graph));
    for (const nn::ModelKind kind : {nn::ModelKind::Gcn, nn::ModelKind::Sage}) {
      const bool gcn = kind == nn::ModelKind::Gcn;
      const auto a = gcn ? datasets::gcn_normalize<float>(res(), sym) : sym.clone(res());
      const auto agg = gcn ? kernels::Aggregate::Sum : kernels::Aggregate::Mean;
      kernels::Tensor<float> fwd(res(), n, w), bwd(res(), n, w);
      kernels::spmm(res(), a.view(), x_all.view(), fwd.view(), agg);
      kernels::spmm_transposed(res(), a.view(), x_all.view(), bwd.view(), agg);
      for (Comm* data : data_comms) {
        for (const bool overlap : {true, false}) {
          SCOPED_TRACE(nn::to_string(kind) + (data ? " data comm" : " comm()") +
                       (overlap ? " overlap" : " no overlap"));
          HaloExchange ex(run, part, nn::graph_preparation(kind), overlap,
                          data != nullptr ? *data : comm());
          const std::int64_t m = ex.num_owned();
          std::vector<float> x_local;
          for (std::int64_t i = 0; i < m; ++i) {
            const std::int64_t g = part.ids.to_original(i);
            x_local.insert(x_local.end(), x.begin() + g * w, x.begin() + (g + 1) * w);
          }
          const auto xl = kernels::Tensor<float>::from_host(run, x_local, m, w);
          kernels::Tensor<float> out(run, m, w), dx(run, m, w);
          ex.forward(run, agg, xl.view(), out.view());
          ex.backward(run, agg, xl.view(), dx.view());
          const std::vector<float> out_h = out.to_vector(run), dx_h = dx.to_vector(run);
          for (std::int64_t i = 0; i < m; ++i) {
            const std::int64_t g = part.ids.to_original(i);
            for (std::int64_t c = 0; c < w; ++c) {
              const auto k = static_cast<std::size_t>(i * w + c);
              EXPECT_NEAR(out_h[k], fwd.data()[g * w + c], 1e-5) << "node " << g;
              EXPECT_NEAR(dx_h[k], bwd.data()[g * w + c], 1e-5) << "node " << g;
            }
          }
          EXPECT_EQ(comm().sum(ex.stats().bytes_sent),
                    2 * shared.meta().metrics.comm_volume * w * 4);
          // The owned products that ran with messages in flight bound what was hidden.
          const ExchangeStats& st = ex.stats();
          EXPECT_LE(st.exposed_s, st.exchange_s + 1e-9);
          if (!overlap) {
            EXPECT_EQ(st.overlap_window_s, 0.0);
          } else {
            EXPECT_LE(st.exchange_s - st.exposed_s, st.overlap_window_s + 1e-9);
            if (ex.num_halo() > 0) {
              EXPECT_GT(st.overlap_window_s, 0.0);
            }
          }
        }
      }
    }
  }
}

TEST(HaloExchange, ProductsEqualOneProcess) {
  expect_exchange_matches_one_process(res(), {nullptr}, "exchange");
}

// ---- training --------------------------------------------------------------------------------

/// Trains on `shared`'s partition with every rank (its own shard).
TrainRun train_partition(const kernels::Resources& run, const SharedPartition& shared,
                         const TrainConfig& config, const StepCallback& on_step = {}) {
  Shard shard = open_shard(run, comm(), shared.dir());
  return train(run, shard, config, {}, on_step);
}

struct Case {
  nn::ModelKind kind;
  partition::Method method;
  bool directed;
  bool mini_batch;
};

TrainConfig config_of(const Case& c) {
  TrainConfig config = test::config_for(c.kind, 3, c.mini_batch ? 3 : 40);
  if (c.mini_batch) config.mini_batch = test::batches(32, {10, 5}, 1);
  return config;
}

class Equivalence : public ::testing::TestWithParam<Case> {};

// The equivalence: every epoch's loss within 1e-4 relative of one process on the whole
// graph, and the same test accuracy (within 0.5 points), full graph and mini-batch, on Cora and
// on a directed Cora, at 1, 2 and 4 ranks.
TEST_P(Equivalence, LossesEqualOneProcess) {
  const Case c = GetParam();
  const TrainConfig config = config_of(c);
  const TrainResult single = test::train_local(res(), graph(c.directed), config).result;
  const SharedPartition shared(
      comm(), graph(c.directed), c.method,
      "eq-" + std::string(partition::to_string(c.method)) + graph_name(c.directed));
  const TrainResult run = train_partition(res(), shared, config).result;
  ASSERT_EQ(run.history.size(), single.history.size());
  for (std::size_t e = 0; e < single.history.size(); ++e) {
    const double a = single.history[e].train_loss, b = run.history[e].train_loss;
    EXPECT_NEAR(b, a, 1e-4 * std::abs(a)) << "epoch " << e + 1;
  }
  EXPECT_NEAR(run.metrics.at("test_accuracy"), single.metrics.at("test_accuracy"), 0.005);
  EXPECT_EQ(run.world_size, comm().size());
}

INSTANTIATE_TEST_SUITE_P(
    Distributed, Equivalence,
    ::testing::Values(Case{nn::ModelKind::Gcn, partition::Method::MetisKway, false, false},
                      Case{nn::ModelKind::Gcn, partition::Method::Random, false, false},
                      Case{nn::ModelKind::Sage, partition::Method::MetisKway, false, false},
                      Case{nn::ModelKind::Gcn, partition::Method::MetisKway, true, false},
                      Case{nn::ModelKind::Sage, partition::Method::Random, true, false},
                      Case{nn::ModelKind::Sage, partition::Method::MetisKway, false, true},
                      Case{nn::ModelKind::Sage, partition::Method::MetisKway, true, true},
                      Case{nn::ModelKind::Gcn, partition::Method::Random, true, true}),
    [](const auto& info) {
      return nn::to_string(info.param.kind) + "_" +
             std::string(partition::to_string(info.param.method)) + "_" +
             graph_name(info.param.directed) + (info.param.mini_batch ? "_minibatch" : "_full");
    });

// --eval-fanouts across ranks: the scored nodes cut into the same batches, their neighbourhoods
// drawn by original id as in one process, every rank scoring the seeds it owns; no full-graph
// pass. The scores equal one process's (within float sums), on Cora and a directed Cora.
TEST(DistributedMiniBatch, ASampledEvaluationEqualsOneProcess) {
  for (const bool directed : {false, true}) {
    SCOPED_TRACE(graph_name(directed));
    TrainConfig config = test::config_for(nn::ModelKind::Sage, 3, 3);
    config.mini_batch = test::batches(32, {10, 5}, 1);
    config.mini_batch->eval_fanouts = {5, 3};
    const TrainResult single = test::train_local(res(), graph(directed), config).result;
    const SharedPartition shared(comm(), graph(directed), partition::Method::MetisKway,
                                 "sampled-eval" + graph_name(directed));
    const TrainResult run = train_partition(res(), shared, config).result;
    ASSERT_EQ(run.history.size(), single.history.size());
    for (std::size_t e = 0; e < single.history.size(); ++e)
      for (const auto& [name, value] : single.history[e].metrics) {
        SCOPED_TRACE(name);
        EXPECT_NEAR(run.history[e].metrics.at(name), value,
                    name == "val_loss" ? 1e-4 * std::abs(value) : 0.005);
      }
    EXPECT_EQ(run.evaluation_spill_bytes, 0);
    EXPECT_GT(run.evaluation_bytes, 0u);
  }
}

// Bytes per epoch from the partition's communication volume V (halo rows over all ranks): GCN
// 1433 -> 16 -> 7 on Cora. Layer 1 (sparse input) transforms first and exchanges 16-wide rows
// forward and, for its weight gradient, 16-wide gradient rows backward; layer 2 (16 -> 7)
// transforms first too: 7 wide each way. 46 floats per halo row and epoch, on the directed
// graph too (the volume counts the graph that is exchanged).
TEST(DistributedTraining, ExchangedBytesFollowTheCommunicationVolume) {
  for (const bool directed : {false, true}) {
    SCOPED_TRACE(graph_name(directed));
    const SharedPartition shared(comm(), graph(directed), partition::Method::MetisKway,
                                 "bytes" + graph_name(directed));
    const TrainRun run = train_partition(res(), shared, test::config_for(nn::ModelKind::Gcn, 0, 3));
    const std::int64_t expected = shared.meta().metrics.comm_volume * (16 + 16 + 7 + 7) * 4;
    for (const EpochStats& s : run.result.history) EXPECT_EQ(s.exchange_bytes, expected);
    if (comm().size() > 1) {
      EXPECT_GT(expected, 0);
    }
  }
}

// ---- distributed mini-batch -------------------------------------------------------------------

// A sampler over RemoteNeighbors draws, for any seeds, the blocks one NeighborSampler on the
// whole graph draws for them (ids mapped back to original ids), on both graphs.
TEST(DistributedMiniBatch, RemoteSamplingEqualsOneProcessSampler) {
  for (const bool directed : {false, true}) {
    SCOPED_TRACE(graph_name(directed));
    const datasets::Dataset& ds = graph(directed);
    const SharedPartition shared(comm(), ds, partition::Method::MetisKway,
                                 "blocks" + graph_name(directed));
    const partition::Part part = partition::read_part(res(), shared.dir(), comm().rank());
    const sampler::SamplerConfig sc{{10, 5}, false, 3};
    RemoteNeighbors remote(part, comm());
    sampler::NeighborSampler distributed(res(), remote, 32, sc);
    remote.reserve(distributed.envelope(), sc.fanouts, sc.replace);
    const datasets::Graph s = partition::partitioning_graph(res(), ds.graph);
    sampler::NeighborSampler one(res(), s, 32, sc);
    for (std::int64_t batch = 0; batch < 4; ++batch) {
      // This rank's seeds: up to 8 * (batch + 1) of its owned training nodes.
      std::vector<NodeId> seeds, seeds_original;
      for (std::int64_t i = 0; i < part.train_idx.numel() && i < 8 * (batch + 1); ++i) {
        seeds.push_back(part.ids.to_partition(part.train_idx.data()[i]));
        seeds_original.push_back(part.ids.to_original(part.train_idx.data()[i]));
      }
      const auto& got =
          distributed.sample(res(), {seeds.data(), static_cast<std::int64_t>(seeds.size())}, 2,
                             static_cast<std::uint64_t>(batch));
      const auto& ref =
          one.sample(res(), {seeds_original.data(), static_cast<std::int64_t>(seeds.size())}, 2,
                     static_cast<std::uint64_t>(batch));
      ASSERT_EQ(got.blocks.size(), ref.blocks.size());
      for (std::size_t l = 0; l < got.blocks.size(); ++l) {
        const sampler::Block &a = got.blocks[l], &b = ref.blocks[l];
        ASSERT_EQ(a.num_dst(), b.num_dst()) << "layer " << l;
        ASSERT_EQ(a.num_src(), b.num_src()) << "layer " << l;
        EXPECT_TRUE(std::equal(a.csr.indptr, a.csr.indptr + a.num_dst() + 1, b.csr.indptr));
        EXPECT_TRUE(std::equal(a.csr.indices, a.csr.indices + a.csr.num_entries, b.csr.indices));
        for (std::int64_t i = 0; i < a.num_src(); ++i)
          ASSERT_EQ(shared.original(a.src_ids[i]), b.src_ids[i]) << "source " << i;
      }
    }
  }
}

// The cache of remote rows changes what travels, not what is computed: the same losses with no
// cache and with 1 MiB (~180 of Cora's rows) chosen by degree or by the first epoch's accesses,
// and less traffic with it (from the second epoch on for the access policy).
TEST(DistributedMiniBatch, TheCacheCutsTrafficAndKeepsTheLosses) {
  const SharedPartition shared(comm(), cora(), partition::Method::MetisKway, "mb-cache");
  TrainConfig config = test::config_for(nn::ModelKind::Sage, 3, 3);
  config.mini_batch = test::batches(32, {10, 5}, 1);
  const TrainResult none = train_partition(res(), shared, config).result;
  if (comm().size() == 1) GTEST_SKIP() << "one part has no remote rows to cache";
  for (const CachePolicy policy : {CachePolicy::Degree, CachePolicy::Access}) {
    SCOPED_TRACE(to_string(policy));
    config.mini_batch->cache_mb = 1;
    config.mini_batch->cache_policy = policy;
    const TrainResult cached = train_partition(res(), shared, config).result;
    for (std::size_t e = 0; e < none.history.size(); ++e) {
      EXPECT_NEAR(cached.history[e].train_loss, none.history[e].train_loss,
                  1e-5 * none.history[e].train_loss);
      if (comm().size() > 1 && (policy == CachePolicy::Degree || e > 0)) {
        EXPECT_LT(cached.history[e].feature_bytes, none.history[e].feature_bytes);
        EXPECT_GT(cached.history[e].cache_hits, 0);
      }
    }
    if (comm().size() > 1) {
      EXPECT_GT(cached.cache_hit_rate, 0);
      EXPECT_GT(none.history[0].remote_rows, 0);
      EXPECT_GT(none.history[0].sampling_bytes, 0);
    }
  }
}

// A partition of a store whose rows stay in the store's file (each rank reads its owned rows
// with pread, a quarter of the budget caching the highest-degree ones, and serves the rows other
// ranks ask for from the file) trains as the parts read into memory do: the same losses and
// scores bit for bit, with and without a cache of remote rows, on a directed and an undirected
// graph whose rows are 4x and more the budget. The rows come from the file (bytes read, some
// served by the row cache).
TEST(DistributedMiniBatch, RowsReadFromTheStoreGiveTheRunOfRowsInMemory) {
  for (const bool directed : {false, true}) {
    SCOPED_TRACE(graph_name(directed));
    const datasets::Dataset undirected = test::small_synthetic(5, 900);
    const datasets::Dataset ds = directed ? halo::testing::directed_copy(test::host(), undirected)
                                          : undirected.clone(test::host());
    const SharedPartition shared(comm(), ds, partition::Method::MetisKway,
                                 "store-rows" + graph_name(directed), true);
    for (const double cache_mb : {0.0, 0.01}) {
      SCOPED_TRACE("cache_mb " + std::to_string(cache_mb));
      TrainConfig config = test::config_for(nn::ModelKind::Sage, 4, 2);
      config.mini_batch = test::batches(40, {6, 4}, 1);
      config.mini_batch->eval_fanouts = {5, 5};
      config.mini_batch->cache_mb = comm().size() > 1 ? cache_mb : 0;
      const std::int64_t rows = ds.num_nodes() * ds.num_features() * 4;
      config.memory_budget = static_cast<std::size_t>(rows / 4 / comm().size());
      Shard in_memory = open_shard(res(), comm(), shared.dir());
      ASSERT_FALSE(in_memory.part.features_by_original);
      const TrainResult want = train(res(), in_memory, config).result;
      partition::PartReadOptions read;
      read.map_store_features = true;
      Shard from_file = open_shard(res(), comm(), shared.dir(), read);
      ASSERT_TRUE(from_file.part.features_by_original);
      const TrainResult got = train(res(), from_file, config).result;
      ASSERT_EQ(got.history.size(), want.history.size());
      for (std::size_t e = 0; e < want.history.size(); ++e) {
        EXPECT_EQ(got.history[e].train_loss, want.history[e].train_loss) << "epoch " << e + 1;
        for (const auto& [name, value] : want.history[e].metrics)
          EXPECT_EQ(got.history[e].metrics.at(name), value) << name << ", epoch " << e + 1;
        EXPECT_EQ(want.history[e].disk_bytes, 0);
        EXPECT_GT(got.history[e].disk_bytes, 0);
        EXPECT_GT(got.history[e].disk_hits, 0);  // the highest-degree rows, cached
        EXPECT_LT(got.history[e].disk_hits, got.history[e].disk_rows);
        EXPECT_EQ(got.history[e].feature_bytes, want.history[e].feature_bytes);
      }
      EXPECT_GT(got.disk_bytes_per_epoch, 0);
      EXPECT_GT(got.disk_cache_hit_rate, 0.0);
      EXPECT_GT(got.evaluation_read_bytes, want.evaluation_read_bytes);
    }
  }
}

// Nothing is allocated per batch after the first: the allocations counted (operator new and
// the C allocators of statically linked code) do not change between the end of a batch's step
// and the end of the epoch's last step, on every rank, for each epoch, with and without the
// producer thread, for SAGE and GCN.
TEST(DistributedMiniBatch, NothingIsAllocatedPerBatchAfterTheFirst) {
  const SharedPartition shared(comm(), cora(), partition::Method::MetisKway, "mb-alloc");
  for (const auto& [kind, prefetch] :
       {std::pair{nn::ModelKind::Sage, 1}, std::pair{nn::ModelKind::Gcn, 0}}) {
    SCOPED_TRACE(nn::to_string(kind) + " prefetch " + std::to_string(prefetch));
    TrainConfig config = test::config_for(kind, 3, 3);
    config.mini_batch = test::batches(16, {10, 5}, prefetch);
    config.mini_batch->cache_mb = comm().size() > 1 ? 0.5 : 0;
    std::vector<std::int64_t> counts;
    counts.reserve(1000);
    const TrainRun run = train_partition(res(), shared, config, [&](std::int64_t batch) {
      counts.push_back(batch);
      counts.push_back(sampler::test::allocation_count());
    });
    const std::int64_t batches = run.result.batches_per_epoch;
    ASSERT_GE(batches, 3);
    ASSERT_EQ(static_cast<std::int64_t>(counts.size()), 2 * batches * config.epochs);
    for (int e = 0; e < config.epochs; ++e) {
      const std::size_t first = static_cast<std::size_t>(2 * e * batches);
      const std::size_t last = first + static_cast<std::size_t>(2 * (batches - 1));
      EXPECT_EQ(counts[last + 1], counts[first + 1])
          << "epoch " << e + 1 << ": allocations after its first batch";
    }
  }
}

// --prefetch auto is decided for all ranks together: each applies what auto_prefetch says for
// its machine (ctest's ranks share this one: they have one boot id), and a producer only where
// every rank has its core; every rank reports the same.
TEST(DistributedMiniBatch, AutoPrefetchIsDecidedTogether) {
  const SharedPartition shared(comm(), cora(), partition::Method::MetisKway, "mb-auto");
  TrainConfig config = test::config_for(nn::ModelKind::Sage, 3, 1);
  config.mini_batch = test::batches(64, {5, 3}, kAutoPrefetch);
  const TrainResult r = train_partition(res(), shared, config).result;
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::int64_t none =
      auto_prefetch(res().cpu_exec().num_threads, CPU_COUNT(&set),
                    static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)), comm().size()) == 0;
  comm().allreduce(kernels::Span<std::int64_t>(&none, 1), ReduceOp::Max);
  EXPECT_EQ(r.prefetch, none ? 0 : 1);
  std::int64_t most = r.prefetch, least = -r.prefetch;
  comm().allreduce(kernels::Span<std::int64_t>(&most, 1), ReduceOp::Max);
  comm().allreduce(kernels::Span<std::int64_t>(&least, 1), ReduceOp::Max);
  EXPECT_EQ(most, -least) << "ranks applied different prefetches";
}

// ---- start-up ----------------------------------------------------------------------------------

// A partition of more parts than ranks opens (each rank a group of parts, as one R-part
// partition); one of fewer parts than ranks is refused on every rank, naming the counts.
TEST(DistributedTraining, OpensMorePartsAndRefusesFewerPartsThanRanks) {
  const int p = comm().size();
  for (const int parts : {p + 1, p - 1}) {
    if (parts < 1) continue;  // one rank: no partition has fewer parts
    const std::filesystem::path dir =
        std::filesystem::path(HALO_TEST_BINARY_DIR) /
        ("dist-parts-" + std::to_string(p) + "-" + std::to_string(parts));
    if (comm().rank() == 0) {
      std::filesystem::remove_all(dir);
      partition::PartitionConfig c;
      c.num_parts = parts;
      c.method = partition::Method::Random;
      const datasets::Dataset ds = test::small_synthetic(11, 300);
      partition::write_partitions(res(), ds, partition::partition_dataset(res(), ds, c), dir);
    }
    comm().barrier();
    if (parts > p) {
      const Shard shard = open_shard(res(), comm(), dir);
      EXPECT_EQ(shard.part.book().num_parts(), p);
      EXPECT_EQ(shard.part.rank(), comm().rank());
      EXPECT_EQ(comm().sum<std::int64_t>(shard.part.num_owned()), 300);
    } else {
      try {
        open_shard(res(), comm(), dir);
        ADD_FAILURE() << "no error";
      } catch (const IoError& e) {
        EXPECT_NE(std::string(e.what()).find("the partition has " + std::to_string(parts) +
                                             " parts but " + std::to_string(p) +
                                             " ranks run; start 1 to " + std::to_string(parts) +
                                             " ranks"),
                  std::string::npos)
            << e.what();
      }
    }
    comm().barrier();
    if (comm().rank() == 0) std::filesystem::remove_all(dir);
  }
}

// The start-up handshake: ranks that opened different partitions (of as many parts) all fail,
// none hangs.
TEST(DistributedTraining, RanksThatOpenDifferentPartitionsAllFail) {
  if (comm().size() == 1) GTEST_SKIP() << "needs two ranks";
  const SharedPartition metis(comm(), cora(), partition::Method::MetisKway, "handshake-metis");
  const SharedPartition random(comm(), cora(), partition::Method::Random, "handshake-random");
  try {
    open_shard(res(), comm(), comm().rank() == 0 ? metis.dir() : random.dir());
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("different partitions"), std::string::npos) << e.what();
  }
}

// ---- launcher environment --------------------------------------------------------------------

// Sets (or, for nullptr, unsets) the launcher's variables for one test and restores them after:
// under mpiexec the real ones are set.
class LauncherEnv {
 public:
  LauncherEnv(const char* hydra, const char* open_mpi) {
    for (const char* name : kNames) {
      const char* v = std::getenv(name);
      m_saved.emplace_back(v != nullptr, v != nullptr ? v : "");
    }
    set(kNames[0], hydra);
    set(kNames[1], open_mpi);
  }
  ~LauncherEnv() {
    for (std::size_t i = 0; i < 2; ++i)
      set(kNames[i], m_saved[i].first ? m_saved[i].second.c_str() : nullptr);
  }

 private:
  static void set(const char* name, const char* value) {
    if (value != nullptr)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  static constexpr const char* kNames[2] = {"MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK"};
  std::vector<std::pair<bool, std::string>> m_saved;
};

TEST(Launcher, LocalRankReadsHydraThenOpenMpi) {
  {
    const LauncherEnv env("3", nullptr);
    EXPECT_EQ(launcher_local_rank(), 3);
  }
  {
    const LauncherEnv env(nullptr, "2");
    EXPECT_EQ(launcher_local_rank(), 2);
  }
  {
    const LauncherEnv env("0", "5");  // Hydra's wins
    EXPECT_EQ(launcher_local_rank(), 0);
  }
}

// ---- checkpoints -----------------------------------------------------------------------------

std::vector<std::vector<float>> parameter_values(TrainRun& run) {
  std::vector<std::vector<float>> v;
  for (auto* p : run.model.parameters()) v.push_back(p->value.to_vector(res()));
  return v;
}

// The last rank alone asks to stop after the 6th step (mid-epoch): every rank stops there (the
// flag is reduced at each step boundary), the agreed checkpoint resumes, and the run ends with
// the losses and parameters of an uninterrupted one, bit for bit; a checkpoint is refused on
// another partition of the same data.
TEST(DistributedCheckpoint, OneRanksSignalStopsAllAndTheResumeIsExact) {
  TrainConfig config = test::config_for(nn::ModelKind::Sage, 3, 3);
  config.mini_batch = test::batches(32, {5, 5}, 1);  // Cora: 5 batches an epoch
  const SharedPartition shared(comm(), cora(), partition::Method::MetisKway, "ckpt");
  TrainRun whole = train_partition(res(), shared, config);
  const std::filesystem::path dir =
      std::filesystem::path(HALO_TEST_BINARY_DIR) / ("ckpt-" + std::to_string(comm().size()));
  if (comm().rank() == 0) std::filesystem::remove_all(dir);
  comm().barrier();
  TrainConfig first = config;
  first.checkpoint.dir = dir;
  std::int64_t steps = 0;
  clear_preemption();
  TrainRun cut = train_partition(res(), shared, first, [&](std::int64_t) {
    if (++steps == 6 && comm().rank() == comm().size() - 1) request_preemption();
  });
  clear_preemption();
  EXPECT_TRUE(cut.result.preempted);
  EXPECT_EQ(steps, 6);
  EXPECT_EQ(cut.result.preemption_checks, 6);
  EXPECT_EQ(std::filesystem::path(cut.result.checkpoint).filename(), "epoch-000001-step-000001");
  TrainConfig again = first;
  again.checkpoint.resume = true;
  TrainRun resumed = train_partition(res(), shared, again);
  EXPECT_EQ(resumed.result.resumed_from, cut.result.checkpoint);
  ASSERT_EQ(resumed.result.history.size(), whole.result.history.size());
  for (std::size_t e = 0; e < whole.result.history.size(); ++e)
    EXPECT_EQ(resumed.result.history[e].train_loss, whole.result.history[e].train_loss)
        << "epoch " << e + 1;
  EXPECT_EQ(resumed.result.best_epoch, whole.result.best_epoch);
  EXPECT_EQ(parameter_values(resumed), parameter_values(whole));
  const SharedPartition other(comm(), cora(), partition::Method::Random, "ckpt-random");
  EXPECT_THROW(train_partition(res(), other, again), IoError);
  comm().barrier();
  if (comm().rank() == 0) std::filesystem::remove_all(dir);
}

TEST(Launcher, LocalRankIsMinusOneWithoutLauncherOrForMalformedValues) {
  {
    const LauncherEnv env(nullptr, nullptr);
    EXPECT_EQ(launcher_local_rank(), -1);
  }
  for (const char* bad : {"", "x", "2x", "-1", "99999999999999999999"}) {
    const LauncherEnv env(bad, nullptr);
    EXPECT_EQ(launcher_local_rank(), -1) << "'" << bad << "'";
  }
}

TEST(Launcher, LocalGpuIsLocalRankModuloDevices) {
  const int devices = kernels::cuda_device_count();
  const LauncherEnv env("5", nullptr);
  if (devices == 0) {
    EXPECT_THROW(local_cuda_device(), LogicError);
  } else {
    EXPECT_EQ(local_cuda_device(), 5 % devices);
  }
}

TEST(NcclCommSetup, RefusesAHostResources) {
  // In a build without NCCL the message says so; with NCCL a CPU Resources has no GPU to use.
  EXPECT_THROW(make_nccl_comm(comm(), res()), LogicError);
  EXPECT_EQ(comm().memory_device(), kernels::Device::Cpu);
}

// ---- GPU ranks (skipped without a CUDA device) ---------------------------------------------

// Why the GPU tests cannot run here, or empty. NCCL needs one GPU per rank of a host.
std::string cuda_unavailable(bool need_nccl) {
  const int devices = kernels::cuda_device_count();
  if (devices == 0) return "no CUDA device";
  if (need_nccl && !nccl_available()) return "built without NCCL";
  if (std::max(launcher_local_size(), 1) > devices)
    return std::to_string(launcher_local_size()) + " ranks on this host, " +
           std::to_string(devices) + " GPU(s): NCCL needs one GPU per rank";
  return {};
}

#define HALO_SKIP_WITHOUT_GPU(need_nccl)                 \
  do {                                                   \
    const std::string why = cuda_unavailable(need_nccl); \
    if (!why.empty()) GTEST_SKIP() << why;               \
  } while (0)

const kernels::Resources& cuda_res() {
  static const kernels::Resources r(kernels::Device::Cuda, 1, local_cuda_device());
  return r;
}

// Made on first use (collective: every rank reaches it in the same test); main destroys it
// before MPI and the CUDA runtime shut down.
std::unique_ptr<Comm> g_nccl;
Comm& nccl() {
  if (!g_nccl) g_nccl = make_nccl_comm(comm(), cuda_res());
  return *g_nccl;
}

template <class T>
kernels::Tensor<T> upload(const std::vector<T>& v) {
  return kernels::Tensor<T>::from_host(cuda_res(), v);
}

TEST(NcclCommCuda, CollectivesEqualMpiComm) {
  HALO_SKIP_WITHOUT_GPU(true);
  Comm& dev = nccl();
  const int r = comm().rank(), p = comm().size();
  EXPECT_EQ(dev.memory_device(), kernels::Device::Cuda);
  ASSERT_EQ(dev.rank(), r);
  ASSERT_EQ(dev.size(), p);

  // allreduce, each type and op, on device data: the MpiComm result on host data.
  std::vector<float> f = {1.5f * static_cast<float>(r), -static_cast<float>(r), 0.25f};
  std::vector<double> d = {static_cast<double>(r) / 3, 7.0};
  std::vector<std::int64_t> i = {r + 1, 100 - r};
  for (const ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
    auto fd = upload(f);
    auto dd = upload(d);
    auto id = upload(i);
    dev.allreduce(fd.span(), op);
    dev.allreduce(dd.span(), op);
    dev.allreduce(id.span(), op);
    std::vector<float> fh = f;
    std::vector<double> dh = d;
    std::vector<std::int64_t> ih = i;
    comm().allreduce(kernels::Span<float>(fh.data(), 3), op);
    comm().allreduce(kernels::Span<double>(dh.data(), 2), op);
    comm().allreduce(kernels::Span<std::int64_t>(ih.data(), 2), op);
    EXPECT_EQ(fd.to_vector(cuda_res()), fh);
    EXPECT_EQ(dd.to_vector(cuda_res()), dh);
    EXPECT_EQ(id.to_vector(cuda_res()), ih);
  }
  EXPECT_EQ(dev.sum<std::int64_t>(r + 1), std::int64_t{p} * (p + 1) / 2);  // host value, staged

  auto b = upload(std::vector<std::int32_t>{r == 0 ? 42 : -1, r});
  dev.broadcast(b.data(), b.bytes(), 0);
  EXPECT_EQ(b.to_vector(cuda_res()), (std::vector<std::int32_t>{42, 0}));

  // alltoall of counts and alltoallv: rank r sends j + 1 copies of (100 r + j) to rank j.
  std::vector<std::int64_t> send_n(static_cast<std::size_t>(p)), send;
  std::vector<std::size_t> send_bytes, recv_bytes;
  for (int j = 0; j < p; ++j) {
    send_n[static_cast<std::size_t>(j)] = j + 1;
    send.insert(send.end(), static_cast<std::size_t>(j + 1), 100 * r + j);
    send_bytes.push_back(static_cast<std::size_t>(j + 1) * sizeof(std::int64_t));
  }
  const std::vector<std::int64_t> recv_n = dev.alltoall(send_n);
  EXPECT_EQ(recv_n, comm().alltoall(send_n));
  for (const std::int64_t n : recv_n)
    recv_bytes.push_back(static_cast<std::size_t>(n) * sizeof(std::int64_t));
  std::vector<std::int64_t> expected(static_cast<std::size_t>(p * (r + 1)));
  comm().alltoallv(send.data(), send_bytes, expected.data(), recv_bytes);
  const auto send_d = upload(send);
  kernels::Tensor<std::int64_t> recv_d(cuda_res(), p * (r + 1), 1);
  dev.alltoallv(send_d.data(), send_bytes, recv_d.data(), recv_bytes);
  EXPECT_EQ(recv_d.to_vector(cuda_res()), expected);

  // allgatherv: rank r contributes r + 1 bytes of value r.
  const std::vector<std::byte> mine(static_cast<std::size_t>(r + 1), std::byte(r));
  std::vector<std::size_t> counts_mpi, counts_nccl;
  const std::vector<std::byte> all = comm().allgatherv(mine.data(), mine.size(), counts_mpi);
  const auto mine_d = upload(mine);
  EXPECT_EQ(dev.allgatherv(mine_d.data(), mine.size(), counts_nccl), all);
  EXPECT_EQ(counts_nccl, counts_mpi);

  dev.barrier();
  // Host buffers are refused where the contract asks for device memory.
  EXPECT_THROW(dev.alltoallv(send.data(), send_bytes, expected.data(), recv_bytes), LogicError);
}

TEST(NcclCommCuda, NonBlockingRingDeliversEveryMessage) {
  HALO_SKIP_WITHOUT_GPU(true);
  const int r = comm().rank(), p = comm().size();
  if (p == 1) GTEST_SKIP() << "a ring needs two ranks";
  Comm& dev = nccl();
  const auto out = upload(std::vector<float>(1000, static_cast<float>(r)));
  kernels::Tensor<float> in(cuda_res(), 1000, 1);
  std::vector<Request> reqs = {dev.irecv(in.data(), in.bytes(), (r + p - 1) % p, 5),
                               dev.isend(out.data(), out.bytes(), (r + 1) % p, 5)};
  while (!dev.test_all(reqs)) {
  }
  EXPECT_FALSE(reqs[0].active || reqs[1].active);
  const std::vector<float> got = in.to_vector(cuda_res());
  EXPECT_TRUE(std::all_of(got.begin(), got.end(),
                          [&](float x) { return x == static_cast<float>((r + p - 1) % p); }));
  dev.wait_all(reqs);  // completed requests are inactive: returns at once
}

// The halo exchange on device tensors, rows over NCCL and staged over MPI: the one-process
// products (computed on the CPU).
TEST(HaloExchangeCuda, ProductsEqualOneProcess) {
  HALO_SKIP_WITHOUT_GPU(false);
  std::vector<Comm*> data_comms = {nullptr};  // staged through host memory over MPI
  if (nccl_available()) data_comms.push_back(&nccl());
  expect_exchange_matches_one_process(cuda_res(), data_comms, "exchange-cuda");
}

// 20 epochs of GCN on Cora with GPU ranks (NCCL when built with it, else staged over MPI): the
// losses of one CPU process, within 1e-3; then mini-batch SAGE (sampling and feature rows on
// the host over MPI, compute on the device, gradients over NCCL).
TEST(DistributedTrainingCuda, LossesEqualOneCpuProcess) {
  HALO_SKIP_WITHOUT_GPU(false);
  for (const bool mini : {false, true}) {
    SCOPED_TRACE(mini ? "mini-batch" : "full graph");
    TrainConfig config =
        test::config_for(mini ? nn::ModelKind::Sage : nn::ModelKind::Gcn, 3, mini ? 3 : 20);
    if (mini) config.mini_batch = test::batches(32, {10, 5});
    const TrainResult single = test::train_local(res(), cora(), config).result;
    const SharedPartition shared(comm(), cora(), partition::Method::MetisKway, "cora-cuda");
    const TrainResult run = train_partition(cuda_res(), shared, config).result;
    ASSERT_EQ(run.history.size(), single.history.size());
    for (std::size_t e = 0; e < single.history.size(); ++e)
      EXPECT_NEAR(run.history[e].train_loss, single.history[e].train_loss, 1e-3)
          << "epoch " << e + 1;
  }
}

}  // namespace
}  // namespace halo::runtime

int main(int argc, char** argv) {
  return halo::runtime::test::run_mpi_tests(
      argc, argv, "distributed_test", [](halo::runtime::Comm& c) { halo::runtime::g_comm = &c; },
      [] { halo::runtime::g_nccl.reset(); });
}
