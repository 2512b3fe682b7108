// Distributed full-graph training, run by ctest under mpiexec -n 1, 2 and 4: communicator
// calls, the halo exchange against single-process products, and whole training runs against
// train_full_graph on Cora. Suites named *Cuda* run GPU ranks (NCCL) and skip without a device;
// ctest runs them as the separate distributed_cuda_np* entries.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/plain_format.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/synthetic.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/spmm.hpp>
#include <halo/partition/partition_format.hpp>
#include <halo/partition/partitioner.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/runtime/comm/nccl_comm.hpp>
#include <halo/runtime/distributed.hpp>
#include <halo/runtime/distributed_minibatch.hpp>
#include <halo/runtime/minibatch.hpp>
#include <halo/runtime/trainer.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

namespace halo::runtime {
namespace {

Comm* g_comm = nullptr;
Comm& comm() { return *g_comm; }

const kernels::Resources& res() {
  static const kernels::Resources r(kernels::Device::Cpu, 1);
  return r;
}

const datasets::Dataset& cora() {
  static const datasets::Dataset d =
      datasets::read_directory(res(), std::filesystem::path(HALO_TEST_SOURCE_DIR) / ".." /
                                          "shared" / "datasets" / "planetoid" / "cora");
  return d;
}

/// Rank 0 partitions `ds` into comm().size() parts under a fresh directory all ranks can read;
/// the directory is removed when the object dies.
class SharedPartition {
 public:
  SharedPartition(const datasets::Dataset& ds, partition::Method method, const std::string& name)
      : m_dir(std::filesystem::path(HALO_TEST_BINARY_DIR) /
              ("dist-" + name + "-" + std::to_string(comm().size()))) {
    if (comm().rank() == 0) {
      std::filesystem::remove_all(m_dir);
      partition::PartitionConfig c;
      c.num_parts = comm().size();
      c.method = method;
      c.seed = 7;
      m_result = partition::partition_dataset(res(), ds, c);
      partition::write_partitions(res(), ds, m_result, m_dir);
    }
    comm().barrier();
    m_meta = partition::read_partition_meta(m_dir);
  }
  ~SharedPartition() {
    comm().barrier();
    if (comm().rank() == 0) std::filesystem::remove_all(m_dir);
  }
  const std::filesystem::path& dir() const { return m_dir; }
  const partition::PartitionMeta& meta() const { return m_meta; }

 private:
  std::filesystem::path m_dir;
  partition::PartitionResult m_result;
  partition::PartitionMeta m_meta;
};

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

// ---- halo exchange ---------------------------------------------------------------------------

datasets::Dataset small_graph() {
  datasets::SyntheticConfig c;
  c.num_nodes = 300;
  c.num_classes = 3;
  c.num_features = 8;
  c.seed = 11;
  return datasets::make_synthetic(res(), c);
}

// Rows of the full product Agg(A, x) (one process, on the CPU) and Agg^T(A, y) equal what the
// ranks compute through their HaloExchange on `run` (CPU or CUDA tensors), for both model kinds,
// with and without overlap, for each data communicator (nullptr: rows over comm()).
void expect_exchange_matches_one_process(const kernels::Resources& run,
                                         const std::vector<Comm*>& data_comms,
                                         const std::string& name) {
  const datasets::Dataset ds = small_graph();
  const SharedPartition shared(ds, partition::Method::MetisKway, name);
  const partition::Part part = partition::read_part(res(), shared.dir(), comm().rank());
  const std::int64_t n = ds.num_nodes(), w = 5;
  std::vector<float> x(static_cast<std::size_t>(n * w));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  const auto x_all = kernels::Tensor<float>::from_host(res(), x, n, w);
  for (const nn::ModelKind kind : {nn::ModelKind::Gcn, nn::ModelKind::Sage}) {
    const FullGraphInputs full = prepare_full_graph(res(), ds, kind, false);
    const auto agg =
        kind == nn::ModelKind::Gcn ? kernels::Aggregate::Sum : kernels::Aggregate::Mean;
    kernels::Tensor<float> fwd(res(), n, w), bwd(res(), n, w);
    kernels::spmm(res(), full.graph.view(), x_all.view(), fwd.view(), agg);
    kernels::spmm_transposed(res(), full.graph.view(), x_all.view(), bwd.view(), agg);
    for (Comm* data : data_comms) {
      for (const bool overlap : {true, false}) {
        SCOPED_TRACE(nn::to_string(kind) + (data ? " data comm" : " comm()") +
                     (overlap ? " overlap" : " no overlap"));
        HaloExchange ex(run, comm(), part, kind, overlap, data);
        const std::int64_t m = ex.num_owned();
        std::vector<float> x_local;
        for (std::int64_t i = 0; i < m; ++i) {
          const std::int64_t g = part.original_ids.data()[i];
          x_local.insert(x_local.end(), x.begin() + g * w, x.begin() + (g + 1) * w);
        }
        const auto xl = kernels::Tensor<float>::from_host(run, x_local, m, w);
        kernels::Tensor<float> out(run, m, w), dx(run, m, w);
        ex.forward(run, agg, xl.view(), out.view());
        ex.backward(run, agg, xl.view(), dx.view());
        const std::vector<float> out_h = out.to_vector(run), dx_h = dx.to_vector(run);
        for (std::int64_t i = 0; i < m; ++i) {
          const std::int64_t g = part.original_ids.data()[i];
          for (std::int64_t c = 0; c < w; ++c) {
            const auto k = static_cast<std::size_t>(i * w + c);
            EXPECT_NEAR(out_h[k], fwd.data()[g * w + c], 1e-5) << "node " << g;
            EXPECT_NEAR(dx_h[k], bwd.data()[g * w + c], 1e-5) << "node " << g;
          }
        }
        // Each halo row crosses once per direction: the partition's communication volume.
        const std::int64_t bytes = comm().sum(ex.stats().bytes_sent);
        EXPECT_EQ(bytes, 2 * shared.meta().metrics.comm_volume * w *
                             static_cast<std::int64_t>(sizeof(float)));
      }
    }
  }
}

TEST(HaloExchange, ProductsEqualOneProcess) {
  expect_exchange_matches_one_process(res(), {nullptr}, "exchange");
}

// ---- training --------------------------------------------------------------------------------

struct Case {
  nn::ModelKind kind;
  partition::Method method;
};

TrainConfig config_for(nn::ModelKind kind, int epochs) {
  TrainConfig c;
  c.model.kind = kind;
  c.epochs = epochs;
  c.seed = 3;
  return c;
}

class CoraTraining : public ::testing::TestWithParam<Case> {};

// The equivalence: the first 20 epochs' losses within 1e-4 relative of one process,
// the final test accuracy within 0.5 points.
TEST_P(CoraTraining, EqualsOneProcess) {
  const Case c = GetParam();
  const int epochs = 100;
  const TrainConfig config = config_for(c.kind, epochs);
  nn::Model<float> single_model = make_model(res(), cora(), config);
  const TrainResult single = train_full_graph(res(), cora(), config, single_model);

  const SharedPartition shared(cora(), c.method,
                               "cora-" + std::string(partition::to_string(c.method)));
  const DistributedRun run =
      train_distributed(res(), comm(), shared.dir(), config, DistributedOptions{});
  ASSERT_EQ(run.result.history.size(), single.history.size());
  for (int e = 0; e < 20; ++e) {
    const double a = single.history[static_cast<std::size_t>(e)].train_loss;
    const double b = run.result.history[static_cast<std::size_t>(e)].train_loss;
    EXPECT_NEAR(b, a, 1e-4 * std::abs(a)) << "epoch " << e + 1;
  }
  EXPECT_NEAR(run.result.test_accuracy, single.test_accuracy, 0.005);
  EXPECT_EQ(run.result.world_size, comm().size());
}

INSTANTIATE_TEST_SUITE_P(Distributed, CoraTraining,
                         ::testing::Values(Case{nn::ModelKind::Gcn, partition::Method::MetisKway},
                                           Case{nn::ModelKind::Gcn, partition::Method::Random},
                                           Case{nn::ModelKind::Sage, partition::Method::MetisKway}),
                         [](const auto& info) {
                           return nn::to_string(info.param.kind) + "_" +
                                  std::string(partition::to_string(info.param.method));
                         });

// Bytes per epoch from the partition's communication volume V (halo rows over all ranks): GCN
// 1433 -> 16 -> 7 on Cora. Layer 1 (sparse input) transforms first and exchanges 16-wide rows
// forward and, for its weight gradient, 16-wide gradient rows backward; layer 2 (16 -> 7)
// transforms first too: 7 wide each way. 46 floats per halo row and epoch.
TEST(DistributedTraining, ExchangedBytesFollowTheCommunicationVolume) {
  const SharedPartition shared(cora(), partition::Method::MetisKway, "bytes");
  const DistributedRun run = train_distributed(
      res(), comm(), shared.dir(), config_for(nn::ModelKind::Gcn, 3), DistributedOptions{});
  const std::int64_t expected = shared.meta().metrics.comm_volume * (16 + 16 + 7 + 7) * 4;
  for (const EpochStats& s : run.result.history) {
    EXPECT_EQ(s.exchange_bytes, expected);
  }
  if (comm().size() > 1) {
    EXPECT_GT(expected, 0);
  }
}

// ---- distributed mini-batch -------------------------------------------------------------------

MiniBatchConfig small_batches() {
  MiniBatchConfig mb;
  mb.batch_size = 32;
  mb.fanouts = {10, 5};
  mb.prefetch = 0;
  return mb;
}

// Each rank's share of a batch, sampled by the owners of its frontiers, gives the blocks one
// NeighborSampler on the whole graph draws for the same seeds; the shares make up the batch.
TEST(DistributedMiniBatch, BlocksEqualOneProcessSampler) {
  const SharedPartition shared(cora(), partition::Method::MetisKway, "mb-blocks");
  const partition::Part part = partition::read_part(res(), shared.dir(), comm().rank());
  const TrainConfig config = config_for(nn::ModelKind::Sage, 1);
  const MiniBatchConfig mb = small_batches();
  nn::Model<float> model = make_model(res(), cora(), config);
  DistributedMiniBatchTrainer trainer(res(), comm(), part, config, mb, model);
  const FullGraphInputs full = prepare_full_graph(res(), cora(), nn::ModelKind::Sage, true);
  sampler::NeighborSampler one(res(), full.graph, mb.batch_size,
                               sampler::SamplerConfig{mb.fanouts, false, config.seed});
  for (std::int64_t batch = 0; batch < trainer.batches_per_epoch(); ++batch) {
    SCOPED_TRACE(::testing::Message() << "batch " << batch);
    const std::vector<kernels::NodeId> seeds = trainer.seeds(2, batch);
    const std::vector<HostBlock> blocks = trainer.sample(seeds, 2, batch);
    const std::int64_t whole = std::min<std::int64_t>(32, 140 - 32 * batch);
    EXPECT_EQ(comm().sum(static_cast<std::int64_t>(seeds.size())), whole);
    const sampler::MiniBatch& ref =
        one.sample(res(), {seeds.data(), static_cast<std::int64_t>(seeds.size())}, 2,
                   static_cast<std::uint64_t>(batch));
    ASSERT_EQ(blocks.size(), ref.blocks.size());
    for (std::size_t l = 0; l < blocks.size(); ++l) {
      const sampler::Block& r = ref.blocks[l];
      ASSERT_EQ(blocks[l].num_dst(), r.num_dst()) << "layer " << l;
      ASSERT_EQ(blocks[l].num_src(), r.num_src()) << "layer " << l;
      EXPECT_TRUE(std::equal(blocks[l].indptr.begin(), blocks[l].indptr.end(), r.csr.indptr));
      EXPECT_TRUE(std::equal(blocks[l].indices.begin(), blocks[l].indices.end(), r.csr.indices));
      EXPECT_TRUE(std::equal(blocks[l].src_ids.begin(), blocks[l].src_ids.end(), r.src_ids.data));
    }
  }
}

// The equivalence for mini-batches: every epoch's loss within 1e-4 relative of
// MiniBatchTrainer in one process (same seed, batches, fan-outs), and the same accuracy, with
// and without the cache of remote rows; the cache (1 MiB: ~180 of Cora's rows) cuts the traffic.
TEST(DistributedMiniBatch, LossesEqualOneProcess) {
  const TrainConfig config = config_for(nn::ModelKind::Sage, 3);
  MiniBatchConfig mb = small_batches();
  nn::Model<float> single_model = make_model(res(), cora(), config);
  MiniBatchTrainer single_trainer(res(), cora(), config, mb, single_model);
  const TrainResult single = run_epochs(res(), single_trainer, config.epochs, single_model);

  const SharedPartition shared(cora(), partition::Method::MetisKway, "mb-loss");
  const partition::Part part = partition::read_part(res(), shared.dir(), comm().rank());
  std::vector<std::int64_t> bytes;
  for (const double cache_mb : {0.0, 1.0}) {
    SCOPED_TRACE(::testing::Message() << "cache " << cache_mb << " MiB");
    mb.cache_mb = cache_mb;
    nn::Model<float> model = make_model(res(), cora(), config);
    DistributedMiniBatchTrainer trainer(res(), comm(), part, config, mb, model);
    const TrainResult run = run_epochs(res(), trainer, config.epochs, model);
    for (std::size_t e = 0; e < single.history.size(); ++e) {
      const double a = single.history[e].train_loss, b = run.history[e].train_loss;
      EXPECT_NEAR(b, a, 1e-4 * std::abs(a)) << "epoch " << e + 1;
    }
    EXPECT_NEAR(run.test_accuracy, single.test_accuracy, 0.005);
    bytes.push_back(run.history.front().exchange_bytes);
  }
  if (comm().size() > 1) {
    EXPECT_GT(bytes[0], 0);
    EXPECT_LT(bytes[1], bytes[0]);
  }
}

TEST(DistributedTraining, RefusesAPartitionWithAnotherNumberOfParts) {
  const int p = comm().size();
  const std::filesystem::path dir =
      std::filesystem::path(HALO_TEST_BINARY_DIR) / ("dist-wrong-" + std::to_string(p));
  if (comm().rank() == 0) {
    std::filesystem::remove_all(dir);
    partition::PartitionConfig c;
    c.num_parts = p + 1;
    c.method = partition::Method::Random;
    partition::write_partitions(res(), small_graph(),
                                partition::partition_dataset(res(), small_graph(), c), dir);
  }
  comm().barrier();
  try {
    train_distributed(res(), comm(), dir, config_for(nn::ModelKind::Gcn, 1), DistributedOptions{});
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("mpiexec -n " + std::to_string(p + 1)), std::string::npos)
        << e.what();
  }
  comm().barrier();
  if (comm().rank() == 0) std::filesystem::remove_all(dir);
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

// 20 epochs of GCN on Cora with GPU ranks (train_distributed: NCCL when built with it; and the
// trainer with host staging over MPI): the losses of one CPU process, within 1e-3.
TEST(DistributedTrainingCuda, CoraGcnLossesEqualOneCpuProcess) {
  HALO_SKIP_WITHOUT_GPU(false);
  const int epochs = 20;
  const TrainConfig config = config_for(nn::ModelKind::Gcn, epochs);
  nn::Model<float> single_model = make_model(res(), cora(), config);
  const TrainResult single = train_full_graph(res(), cora(), config, single_model);
  const SharedPartition shared(cora(), partition::Method::MetisKway, "cora-cuda");

  const DistributedRun run =
      train_distributed(cuda_res(), comm(), shared.dir(), config, DistributedOptions{});
  const partition::Part part = partition::read_part(res(), shared.dir(), comm().rank());
  nn::Model<float> staged_model = make_model(cuda_res(), cora(), config);
  DistributedTrainer staged(cuda_res(), comm(), part, config, staged_model, /*overlap=*/true);
  const TrainResult staged_run = run_epochs(cuda_res(), staged, epochs, staged_model);
  for (const TrainResult* r : {&run.result, &staged_run}) {
    SCOPED_TRACE(r == &staged_run ? "staged over MPI" : "train_distributed");
    ASSERT_EQ(r->history.size(), single.history.size());
    for (std::size_t e = 0; e < single.history.size(); ++e)
      EXPECT_NEAR(r->history[e].train_loss, single.history[e].train_loss, 1e-3)
          << "epoch " << e + 1;
  }
}

// Mini-batch SAGE with GPU ranks: sampling and feature rows on the host over MPI, compute on
// the device, gradients over NCCL: the losses of MiniBatchTrainer in one CPU process.
TEST(DistributedMiniBatchCuda, LossesEqualOneCpuProcess) {
  HALO_SKIP_WITHOUT_GPU(false);
  const TrainConfig config = config_for(nn::ModelKind::Sage, 3);
  const MiniBatchConfig mb = small_batches();
  nn::Model<float> single_model = make_model(res(), cora(), config);
  MiniBatchTrainer single_trainer(res(), cora(), config, mb, single_model);
  const TrainResult single = run_epochs(res(), single_trainer, config.epochs, single_model);

  const SharedPartition shared(cora(), partition::Method::MetisKway, "mb-cuda");
  DistributedOptions options;
  options.mini_batch = mb;
  const DistributedRun run = train_distributed(cuda_res(), comm(), shared.dir(), config, options);
  ASSERT_EQ(run.result.history.size(), single.history.size());
  for (std::size_t e = 0; e < single.history.size(); ++e)
    EXPECT_NEAR(run.result.history[e].train_loss, single.history[e].train_loss, 1e-3)
        << "epoch " << e + 1;
}

}  // namespace
}  // namespace halo::runtime

namespace {
// Ranks other than 0 print only their failures, prefixed with the rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : m_rank(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", m_rank,
                   r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }

 private:
  int m_rank;
};
}  // namespace

// Every rank runs every test; the exit status is non-zero when a test failed on any rank.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto comm = halo::runtime::make_world_comm();
  halo::runtime::g_comm = comm.get();
  if (comm->rank() != 0) {  // one report, rank 0's, plus every other rank's failures
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(comm->rank()));
  }
  std::int64_t failed = RUN_ALL_TESTS() != 0;
  halo::runtime::g_nccl.reset();
  failed = comm->sum(failed);
  if (failed > 0 && comm->rank() == 0)
    std::fprintf(stderr, "distributed_test: failures on %lld rank(s)\n",
                 static_cast<long long>(failed));
  return failed > 0 ? 1 : 0;
}
