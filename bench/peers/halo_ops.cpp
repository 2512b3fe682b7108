// Halo's side of the peer benchmarks' operator workloads, on a graph exported by
// `halo datasets export` (the file PyG and DGL load):
//   halo_ops sample GRAPH.npz [--fanouts 15,10,5] [--batch 1024] [--threads 2] [--reps 3]
//   halo_ops spmm   GRAPH.npz [--cols 256] [--threads 2] [--reps 5]
// sample: one epoch of batches (every node once as a seed, in a keyed random order) per
// repetition, through the one NeighborSampler; reports sampled edges per second.
// spmm: out = A_hat X with A_hat = D^-1/2 (S + I) D^-1/2 (what a GCN layer aggregates) and X a
// random n x cols matrix; reports seconds per product and the bytes it must move.
// Prints one JSON object per repetition on stdout; exit 2 on usage errors, 1 on data errors.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <halo/datasets/preprocess.hpp>
#include <halo/datasets/readers/numpy.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/spmm.hpp>
#include <halo/sampler/neighbor_sampler.hpp>

#include "support/machine.hpp"

namespace {

using namespace halo;
using kernels::NodeId;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string op, graph;
  std::vector<int> fanouts = {15, 10, 5};
  std::int64_t batch = 1024;
  int threads = 2;
  int reps = 3;
  std::int64_t cols = 256;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "halo_ops: %s\nusage: halo_ops sample|spmm GRAPH.npz [--fanouts A,B,..] "
               "[--batch N] [--threads T] [--reps R] [--cols C]\n",
               why.c_str());
  std::exit(2);
}

std::int64_t parse_int(const std::string& flag, const char* s, std::int64_t min) {
  char* end = nullptr;
  const long long v = std::strtoll(s, &end, 10);
  if (end == s || *end != '\0' || v < min)
    usage(flag + ": expected an integer >= " + std::to_string(min) + ", got '" + s + "'");
  return v;
}

Options parse(int argc, char** argv) {
  if (argc < 3) usage("expected an operation and a graph");
  Options o;
  o.op = argv[1];
  o.graph = argv[2];
  if (o.op != "sample" && o.op != "spmm") usage("unknown operation '" + o.op + "'");
  for (int i = 3; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + ": missing value");
    const char* v = argv[i + 1];
    if (flag == "--fanouts") {
      o.fanouts.clear();
      std::string s = v;
      for (std::size_t b = 0; b <= s.size();) {
        const std::size_t e = std::min(s.find(',', b), s.size());
        o.fanouts.push_back(static_cast<int>(parse_int(flag, s.substr(b, e - b).c_str(), -1)));
        b = e + 1;
      }
    } else if (flag == "--batch") {
      o.batch = parse_int(flag, v, 1);
    } else if (flag == "--threads") {
      o.threads = static_cast<int>(parse_int(flag, v, 1));
    } else if (flag == "--reps") {
      o.reps = static_cast<int>(parse_int(flag, v, 1));
    } else if (flag == "--cols") {
      o.cols = parse_int(flag, v, 1);
    } else {
      usage("unknown flag '" + flag + "'");
    }
  }
  return o;
}

/// The training graph S of the export (`indptr`, `indices`), as a host Graph.
datasets::Graph read_graph(const kernels::Resources& res, const std::string& path) {
  const auto arrays = datasets::read_npz(path);
  const auto need = [&](const char* key) -> const datasets::NpyArray& {
    const auto it = arrays.find(key);
    if (it == arrays.end()) throw IoError(path + ": no array '" + key + "' (not an export?)");
    return it->second;
  };
  const std::vector<std::int64_t> indptr = datasets::to_int64s(need("indptr"), path + ": indptr");
  const std::vector<std::int64_t> indices =
      datasets::to_int64s(need("indices"), path + ": indices");
  const auto n = static_cast<std::int64_t>(indptr.size()) - 1;
  if (n < 0 || indptr.front() != 0 || indptr.back() != static_cast<std::int64_t>(indices.size()))
    throw IoError(path + ": indptr does not describe indices");
  std::vector<NodeId> idx(indices.size());
  for (std::size_t e = 0; e < indices.size(); ++e) {
    if (indices[e] < 0 || indices[e] >= n) throw IoError(path + ": column id out of range");
    idx[e] = static_cast<NodeId>(indices[e]);
  }
  datasets::Graph g;
  g.indptr = kernels::Tensor<std::int64_t>::from_host(res, indptr);
  g.indices = kernels::Tensor<NodeId>::from_host(res, idx);
  g.num_cols = n;
  g.symmetric = true;  // the export's S is symmetric (docs/formats.md)
  return g;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int run_sample(const Options& o) {
  const kernels::Resources res(kernels::Device::Cpu, o.threads);
  const datasets::Graph g = read_graph(res, o.graph);
  const std::int64_t n = g.num_rows();
  const std::int64_t size = std::min(o.batch, std::max<std::int64_t>(n, 1));
  // Every node once per epoch, in a keyed random order (as the trainer shuffles its seeds).
  const std::uint64_t key = kernels::rng::key(1, kernels::rng::kStreamShuffle);
  std::vector<std::pair<std::uint64_t, NodeId>> keyed(static_cast<std::size_t>(n));
  for (std::int64_t v = 0; v < n; ++v)
    keyed[static_cast<std::size_t>(v)] = {
        kernels::rng::draw_keyed(key, static_cast<std::uint64_t>(v)), static_cast<NodeId>(v)};
  std::sort(keyed.begin(), keyed.end());
  std::vector<NodeId> nodes(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i] = keyed[i].second;
  sampler::NeighborSampler s(res, g, size, {o.fanouts, /*replace=*/false, /*seed=*/1});
  const std::int64_t batches = (n + size - 1) / size;
  for (int rep = 0; rep < o.reps; ++rep) {
    std::int64_t edges = 0;
    const auto t0 = Clock::now();
    for (std::int64_t b = 0; b < batches; ++b) {
      const std::int64_t begin = b * size, count = std::min(size, n - begin);
      const sampler::MiniBatch& mb =
          s.sample(res, {nodes.data() + begin, count}, static_cast<std::uint64_t>(rep),
                   static_cast<std::uint64_t>(b));
      for (const sampler::Block& blk : mb.blocks) edges += blk.csr.num_entries;
    }
    const double t = seconds_since(t0);
    std::printf(
        "{\"op\": \"sample\", \"rep\": %d, \"seconds\": %.6f, \"sampled_edges\": %lld, "
        "\"batches\": %lld, \"sampled_edges_per_s\": %.1f, \"threads\": %d}\n",
        rep, t, static_cast<long long>(edges), static_cast<long long>(batches),
        static_cast<double>(edges) / t, o.threads);
  }
  return 0;
}

int run_spmm(const Options& o) {
  const kernels::Resources res(kernels::Device::Cpu, o.threads);
  const datasets::Graph g = read_graph(res, o.graph);
  const auto a = datasets::gcn_normalize<float>(res, g);
  const std::int64_t n = g.num_rows();
  std::vector<float> xs(static_cast<std::size_t>(n * o.cols));
  const std::uint64_t key = kernels::rng::key(7, 0);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = kernels::rng::uniform_keyed(key, i) - 0.5f;
  const auto x = kernels::Tensor<float>::from_host(res, xs, n, o.cols);
  auto out = kernels::Tensor<float>::zeros(res, n, o.cols);
  // Compulsory traffic: the CSR (indptr, indices, values) once, X's rows once, out written once.
  const double bytes = static_cast<double>(a.num_edges()) * 8.0 + static_cast<double>(n) * 8.0 +
                       2.0 * static_cast<double>(n * o.cols) * 4.0;
  const double triad = bench::triad_bytes_per_second();
  kernels::spmm(res, a.view(), x.view(), out.view());  // warm-up
  for (int rep = 0; rep < o.reps; ++rep) {
    const auto t0 = Clock::now();
    kernels::spmm(res, a.view(), x.view(), out.view());
    res.synchronize();
    const double t = seconds_since(t0);
    std::printf(
        "{\"op\": \"spmm\", \"rep\": %d, \"seconds\": %.6f, \"cols\": %lld, \"entries\": %lld, "
        "\"bytes\": %.0f, \"bytes_per_s\": %.1f, \"triad_bytes_per_s\": %.1f, \"threads\": %d}\n",
        rep, t, static_cast<long long>(o.cols), static_cast<long long>(a.num_edges()), bytes,
        bytes / t, triad, o.threads);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    return o.op == "sample" ? run_sample(o) : run_spmm(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halo_ops: %s\n", e.what());
    return 1;
  }
}
