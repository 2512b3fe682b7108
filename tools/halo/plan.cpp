// `halo plan`: the resources a `halo train` command line needs, before it runs (docs/scheduler.md).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include <halo/cluster/hetero_plan.hpp>
#include <halo/cluster/link_plan.hpp>
#include <halo/cluster/plan.hpp>
#include <halo/cluster/slurm.hpp>
#include <halo/datasets/registry.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/kernels/atomic_file.hpp>
#include <halo/partition/formats/part_group.hpp>
#include <halo/partition/formats/partition_format.hpp>
#include <halo/partition/formats/snapshot_format.hpp>
#include <halo/runtime/tasks/link/temporal_part.hpp>
#include <halo/tools/halo/commands.hpp>
#include <halo/tools/halo/run_support.hpp>
#include <halo/tools/halo/train_hetero.hpp>
#include <halo/tools/halo/train_link.hpp>
#include <halo/tools/halo/train_options.hpp>

namespace halo::cli {
namespace {

using nlohmann::json;

struct PlanOptions : TrainOptions {
  int parts = 0;                // --parts: ranks of an estimated split (no partition)
  std::string memory_per_rank;  // --memory-per-rank: find the smallest P that fits
  std::int64_t memory_limit = 0;
  int max_parts = 1024;
  std::string calibration;
  double link_latency_us = -1;  // --link-latency-us / --link-gbps: this link instead
  double link_gbps = -1;
  int host_cores = 0;               // --host-cores: cores the ranks share
  int probe_batches = 32;           // --probe-batches: batches sampled on a store read from file
  double host_transport_gbps = -1;  // --host-transport-gbps: the cores' rate moving messages
  std::string emit = "json";
  std::string output;
  std::string image = "halo:latest";
  std::string job_name = "halo-train";
  // --emit slurm
  int tasks_per_node = 1;
  std::string slurm_partition;
  std::string slurm_output = "halo-%j.out";
  std::string launcher = "mpiexec";
  std::string checkpoint_dir;
  std::vector<std::string> extra_train_args;  // after `--`: appended to the job's halo train
  CLI::App* sub = nullptr;
};

/// The counts of the partition in `dir` on each of `rank_counts` ranks (its K parts in groups,
/// partition::group_counts): measured parts, one input per rank count.
std::vector<cluster::PlanInput> partition_inputs(const std::string& dir,
                                                 const partition::PartitionMeta& meta,
                                                 const std::vector<std::int32_t>& rank_counts) {
  cluster::PlanInput in;
  in.from_partition = true;
  cluster::GraphCounts& g = in.graph;
  g.dataset = meta.dataset;
  g.num_nodes = meta.num_nodes;
  g.input_edges = meta.num_edges;
  g.training_edges = meta.training_edges;
  g.max_degree = meta.max_degree;
  g.degree_histogram = meta.degree_histogram;
  g.weighted = meta.weighted;
  g.num_features = meta.num_features;
  g.sparse_features = meta.sparse_features;
  g.num_classes = meta.num_classes;
  g.num_train = meta.num_train;
  g.store_features = meta.feature_store && meta.feature_store->dtype == datasets::FeatureDtype::F32;
  for (const partition::PartInfo& p : meta.parts) {
    g.disk_bytes += p.file_bytes;
    auto rows = [&](const char* name) {
      const partition::ArrayEntry* a = p.find(name);
      return a != nullptr ? a->rows * a->cols : 0;
    };
    g.feature_nnz += rows("features_indices");
    g.num_val += rows("val_idx");
    g.num_test += rows("test_idx");
  }
  std::vector<cluster::PlanInput> inputs;
  for (std::vector<partition::GroupCounts>& groups :
       partition::group_counts(dir, meta, rank_counts)) {
    inputs.push_back(in);
    inputs.back().parts = std::move(groups);
  }
  return inputs;
}

/// The counts of a store's header: a store directory, or a registered dataset's store (its
/// directory in `store_dir`).
cluster::GraphCounts dataset_counts(const DatasetOptions& d, std::filesystem::path& store_dir) {
  const bool store = datasets::is_store(d.dataset);
  if (!store && (d.dataset == "synthetic" || d.dataset == "rmat"))
    throw UsageError("--dataset " + d.dataset +
                     ": plan reads counts from a store's header (a store directory, a dataset "
                     "directory's or a registered dataset's store) or from a partition's "
                     "meta.json, and never builds a generated graph; prepare a store first "
                     "(halo datasets prepare --dataset " +
                     d.dataset + " --out DIR) and plan with --dataset DIR");
  if (!d.features.empty())
    throw UsageError(
        "--features: plan reads the dataset's own features from its store; plan "
        "on a partition written with --features instead");
  std::filesystem::path dir = d.dataset;
  std::string name;
  if (!store && !datasets::is_registered(d.dataset)) {
    // A dataset directory: its store, prepared on first use.
    datasets::LoadOptions lo;
    lo.offline = true;
    dir = datasets::directory_store(kernels::Resources(kernels::Device::Cpu), d.dataset, lo);
  } else if (!store) {
    const datasets::DatasetInfo& info = datasets::find_dataset(d.dataset);
    dir = datasets::dataset_paths(info).cache;
    name = info.name;
    if (!datasets::is_store(dir))
      throw IoError((dir / datasets::kStoreHeader).string() + ": no store of '" + d.dataset +
                    "'; load the dataset once to build it (e.g. halo train --dataset " + d.dataset +
                    " --epochs 1)");
  }
  const datasets::StoreCounts c = datasets::read_store_counts(dir);
  store_dir = dir;
  if (name.empty()) name = c.name;
  cluster::GraphCounts g;
  g.dataset = name;
  g.num_nodes = c.num_nodes;
  g.input_edges = c.num_edges;
  g.weighted = c.weighted;
  g.training_edges = c.training_edges;
  g.max_degree = c.max_degree;
  g.degree_histogram = c.degree_histogram;
  g.num_features = c.num_features;
  g.sparse_features = c.sparse_features;
  g.feature_nnz = c.feature_nnz;
  g.num_classes = c.num_classes;
  g.num_train = c.num_train;
  g.num_val = c.num_val;
  g.num_test = c.num_test;
  g.disk_bytes = static_cast<std::int64_t>(c.bytes_on_disk);
  return g;
}

json items_json(const std::vector<cluster::MemoryItem>& items) {
  json j = json::object();
  for (const auto& i : items) j[i.name] = i.bytes;
  return j;
}

/// The rank counts a partition of K parts trains on, planned (`halo plan --partitions`): every R
/// from 1 to K up to kFullMenu parts, beyond it the powers of two and K; `at` plans any other.
constexpr int kFullMenu = 32;
struct RankMenu {
  std::vector<cluster::Plan> plans;  // ascending ranks
  std::function<cluster::Plan(int)> plan_of;
  int parts = 0;  // K
  cluster::Plan at(int ranks) const {
    for (const cluster::Plan& p : plans)
      if (p.ranks == ranks) return p;
    return plan_of(ranks);
  }
};

/// The rank menu of a partition: each rank count's predicted largest rank and times.
json menu_json(const RankMenu& menu, const PlanOptions& o) {
  json m = json::array();
  for (const cluster::Plan& p : menu.plans) {
    json e = {{"ranks", p.ranks},
              {"peak_host_bytes_per_rank", p.peak_host_bytes_per_rank},
              {"peak_gpu_bytes_per_rank", p.peak_gpu_bytes_per_rank},
              {"epoch_seconds", p.epoch_seconds},
              {"train_seconds", p.train_seconds},
              {"comm_bytes_per_epoch", p.comm_bytes_per_epoch}};
    if (o.memory_limit > 0)
      e["fits"] = (o.device == "cuda" ? p.peak_gpu_bytes_per_rank : p.peak_host_bytes_per_rank) <=
                  o.memory_limit;
    m.push_back(e);
  }
  return m;
}

json plan_json(const cluster::Plan& p, const PlanOptions& o, const RankMenu& menu) {
  json ranks = json::array();
  for (const cluster::RankPlan& r : p.per_rank)
    ranks.push_back({{"rank", r.rank},
                     {"peak_host_bytes", r.peak_host_bytes},
                     {"peak_gpu_bytes", r.peak_gpu_bytes},
                     {"host_bytes", items_json(r.host)},
                     {"gpu_bytes", items_json(r.gpu)},
                     {"dataset_bytes", r.dataset_bytes},
                     {"scratch_bytes", r.scratch_bytes},
                     {"disk_read_bytes_per_epoch", r.disk_read_bytes_per_epoch},
                     {"evaluation_read_bytes", r.evaluation_read_bytes},
                     {"working_set_bytes", r.working_set_bytes},
                     {"step_scale", r.step_scale},
                     {"comm_bytes_per_epoch",
                      {{"halo_exchange", r.halo_exchange_bytes},
                       {"feature_fetch", r.feature_fetch_bytes},
                       {"allreduce", r.allreduce_bytes}}},
                     {"seconds_per_epoch",
                      {{"compute", r.compute_s},
                       {"dense", r.dense_s},
                       {"sampling", r.sampling_s},
                       {"exposed_sampling", r.exposed_sampling_s},
                       {"exchange", r.exchange_s},
                       {"exposed_exchange", r.exposed_exchange_s},
                       {"allreduce", r.allreduce_s},
                       {"epoch", r.epoch_s}}}});
  json j = {{"format", "halo-plan"},
            {"version", 1},
            {"dataset", p.dataset},
            {"disk_bytes", p.disk_bytes},
            {"mode", p.mode},
            {"model", p.model.empty() ? o.model : p.model},
            {"device", p.device},
            {"ranks", p.ranks},
            {"threads_per_rank", p.threads},
            {"epochs", p.epochs},
            {"parameters", p.parameters},
            {"batches_per_epoch", p.batches_per_epoch},
            {"prefetch", p.prefetch},
            {"sampler_envelope_bytes", p.sampler_envelope_bytes},
            {"peak_host_bytes_per_rank", p.peak_host_bytes_per_rank},
            {"peak_gpu_bytes_per_rank", p.peak_gpu_bytes_per_rank},
            {"epoch_seconds", p.epoch_seconds},
            {"train_seconds", p.train_seconds},
            {"comm_bytes_per_epoch", p.comm_bytes_per_epoch},
            {"checkpoint_bytes", p.checkpoint_bytes},
            {"checkpoint_seconds", p.checkpoint_seconds},
            {"checkpoint_fits_grace_period", p.checkpoint_seconds <= cluster::kGracePeriodSeconds},
            {"parts", !o.partitions.empty() ? "partition"
                      : p.parts_estimated   ? "estimated"
                                            : "whole graph"},
            {"calibrated", p.calibrated},
            {"probed_batches", p.probed_batches},
            {"link_calibrated", p.link_calibrated},
            {"per_rank", ranks}};
  if (!o.partitions.empty()) j["partitions"] = o.partitions;
  if (!menu.plans.empty()) j["rank_menu"] = menu_json(menu, o);
  if (o.memory_limit > 0) j["memory_per_rank_bytes"] = o.memory_limit;
  return j;
}

/// The `halo train` arguments of this command line: every run flag given, plan's own left out.
std::vector<std::string> train_arguments(const PlanOptions& o) {
  static const std::vector<std::string> plan_only = {
      "--parts",          "--memory-per-rank", "--max-parts",    "--calibration",
      "--emit",           "--output",          "--image",        "--job-name",
      "--tasks-per-node", "--slurm-partition", "--slurm-output", "--launcher",
      "--checkpoint-dir", "--probe-batches",   "train_args",     "--help"};
  std::vector<std::string> args = {"halo", "train"};
  for (const CLI::Option* opt : o.sub->get_options()) {
    if (opt->count() == 0) continue;
    const std::string name = opt->get_name();
    if (std::find(plan_only.begin(), plan_only.end(), name) != plan_only.end()) continue;
    if (opt->get_type_size() == 0) {
      args.push_back(name);
      continue;
    }
    std::string value;
    for (const std::string& r : opt->results()) value += (value.empty() ? "" : ",") + r;
    args.push_back(name);
    args.push_back(value);
  }
  return args;
}

/// The sbatch script (cluster::sbatch_script) of `ranks` ranks of `threads` threads, each asking
/// `memory_per_rank` bytes (plus 10 % per node) for `time_limit_s` seconds, running `halo train`
/// with this command line's run flags, `--checkpoint-dir DIR --resume auto` (so that a requeued
/// job resumes) and the arguments after `--`. The program is this very binary.
/// `min_ranks` > 0 and below `ranks`: an elastic job (cluster::SlurmRequest::min_nodes) of
/// min_ranks to `ranks` ranks, `memory_per_rank` and `time_limit_s` those of its fewest ranks.
std::string slurm_job(const PlanOptions& o, int ranks, int threads, std::int64_t memory_per_rank,
                      std::int64_t time_limit_s, int min_ranks = 0) {
  cluster::SlurmRequest r;
  r.job_name = o.job_name;
  r.tasks = ranks;
  r.tasks_per_node = std::min(o.tasks_per_node, ranks);
  r.nodes = (ranks + r.tasks_per_node - 1) / r.tasks_per_node;
  if (min_ranks > 0) {
    const int min_nodes = (min_ranks + r.tasks_per_node - 1) / r.tasks_per_node;
    if (min_nodes < r.nodes) r.min_nodes = min_nodes;
  }
  r.cpus_per_task = std::max(1, threads);
  r.memory_per_node_bytes =
      (memory_per_rank + memory_per_rank / 10) * static_cast<std::int64_t>(r.tasks_per_node);
  r.time_limit_s = time_limit_s;
  r.partition = o.slurm_partition;
  r.output = o.slurm_output;
  r.launcher = {o.launcher};
  r.command = train_arguments(o);
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) r.command[0] = self.string();
  for (const char* a : {"--checkpoint-dir", o.checkpoint_dir.c_str(), "--resume", "auto"})
    r.command.emplace_back(a);
  r.command.insert(r.command.end(), o.extra_train_args.begin(), o.extra_train_args.end());
  return cluster::sbatch_script(r);
}

/// The job of a plan: its ranks and threads, the predicted peak host memory per rank, a time
/// limit of 1.5 x the predicted training time plus the signal lead and 5 minutes (at least 10
/// minutes).
/// A partition's job without --parts is elastic: a node range from the fewest nodes whose ranks
/// fit (--memory-per-rank; else one node) to the nodes of K ranks, asking the memory and time
/// of its fewest ranks.
std::string slurm_job(const cluster::Plan& p, const PlanOptions& o, const RankMenu& menu) {
  const cluster::SlurmRequest defaults;
  const auto time_limit = [&](const cluster::Plan& q) {
    return std::max<std::int64_t>(600, static_cast<std::int64_t>(std::ceil(1.5 * q.train_seconds)) +
                                           defaults.signal_lead_s + 300);
  };
  if (!menu.plans.empty() && o.parts == 0) {
    const int k = menu.parts;
    const int per_node = std::min(o.tasks_per_node, k);
    const int min_ranks = o.memory_limit > 0 ? p.ranks : 1;
    const int fewest = std::min(k, (min_ranks + per_node - 1) / per_node * per_node);
    const cluster::Plan worst = menu.at(fewest);
    return slurm_job(o, k, p.threads, worst.peak_host_bytes_per_rank, time_limit(worst), fewest);
  }
  return slurm_job(o, p.ranks, p.threads, p.peak_host_bytes_per_rank, time_limit(p));
}

/// Kubernetes memory quantity: whole MiB, rounded up.
std::string mebibytes(std::int64_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + "Mi";
}

/// A Kubeflow MPIJob (kubeflow.org/v2beta1) running the plan's ranks, one per worker pod, as JSON
/// (which `kubectl apply -f` reads like YAML). Memory requests are the predicted peak plus 10 %
/// headroom; limits add another 10 %.
json mpijob_manifest(const cluster::Plan& p, const PlanOptions& o, const RankMenu& menu) {
  const std::int64_t request = p.peak_host_bytes_per_rank + p.peak_host_bytes_per_rank / 10;
  const std::int64_t limit = request + request / 10;
  const int cpus = std::max(1, p.threads);
  std::vector<std::string> command = {"mpirun", "-n", std::to_string(p.ranks)};
  for (const std::string& a : train_arguments(o)) command.push_back(a);
  json worker_resources = {
      {"requests", {{"cpu", std::to_string(cpus)}, {"memory", mebibytes(request)}}},
      {"limits", {{"cpu", std::to_string(cpus)}, {"memory", mebibytes(limit)}}}};
  if (p.device == "cuda") {
    worker_resources["requests"]["nvidia.com/gpu"] = "1";
    worker_resources["limits"]["nvidia.com/gpu"] = "1";
  }
  const json launcher = {{"replicas", 1},
                         {"template",
                          {{"spec",
                            {{"containers",
                              {{{"name", "launcher"},
                                {"image", o.image},
                                {"command", command},
                                {"resources",
                                 {{"requests", {{"cpu", "1"}, {"memory", "512Mi"}}},
                                  {"limits", {{"cpu", "1"}, {"memory", "512Mi"}}}}}}}}}}}}};
  const json worker = {
      {"replicas", p.ranks},
      {"template",
       {{"spec",
         {{"terminationGracePeriodSeconds", static_cast<int>(cluster::kGracePeriodSeconds)},
          {"containers",
           {{{"name", "worker"}, {"image", o.image}, {"resources", worker_resources}}}}}}}}};
  json annotations = {
      {"halo.dev/epoch-seconds", std::to_string(p.epoch_seconds)},
      {"halo.dev/peak-host-bytes-per-rank", std::to_string(p.peak_host_bytes_per_rank)},
      {"halo.dev/checkpoint-bytes", std::to_string(p.checkpoint_bytes)}};
  // MPIJob's workers are a fixed count: the other rank counts the partition trains on (the
  // checkpoint resumes on any) are for whoever re-creates the job with another replicas.
  if (!menu.plans.empty()) {
    annotations["halo.dev/ranks"] = "1-" + std::to_string(menu.parts);
    std::string peaks;
    for (const cluster::Plan& q : menu.plans)
      peaks += (peaks.empty() ? "" : ",") + std::to_string(q.ranks) + ":" +
               std::to_string(q.peak_host_bytes_per_rank);
    annotations["halo.dev/peak-host-bytes-per-rank-by-ranks"] = peaks;
  }
  return {
      {"apiVersion", "kubeflow.org/v2beta1"},
      {"kind", "MPIJob"},
      {"metadata", {{"name", o.job_name}, {"annotations", annotations}}},
      {"spec",
       {{"slotsPerWorker", 1},
        {"mpiImplementation", "MPICH"},
        {"runPolicy",
         {{"cleanPodPolicy", "Running"}, {"schedulingPolicy", {{"minAvailable", p.ranks + 1}}}}},
        {"mpiReplicaSpecs", {{"Launcher", launcher}, {"Worker", worker}}}}}};
}

/// The machine's costs: the calibration file (--calibration, else the default place; the
/// built-in defaults, said on stderr, without one), with --link-* and --host-* applied.
cluster::CostModel plan_costs(const PlanOptions& o) {
  cluster::CostModel costs;
  const std::filesystem::path cal = o.calibration.empty() ? cluster::default_calibration_path()
                                                          : std::filesystem::path(o.calibration);
  if (!o.calibration.empty() || std::filesystem::exists(cal)) {
    costs = cluster::read_cost_model(cal);
  } else {
    std::fprintf(stderr,
                 "halo plan: no calibration at %s (run `halo calibrate`); using the built-in "
                 "default costs, so the times are rough\n",
                 cal.string().c_str());
  }
  if (o.link_latency_us >= 0) {
    // The wire's latency replaced; the in-step messages keep what they add to the ping-pong.
    const double a = o.link_latency_us * 1e-6;
    for (cluster::CollectiveCosts& c : costs.collectives)
      for (double* msg : {&c.full_graph_message_s, &c.mini_batch_message_s})
        if (*msg > 0) *msg = std::max(a, *msg - costs.link_alpha_s + a);
    costs.link_alpha_s = a;
  }
  // The transport's CPU work besides the link's time: the rate the calibration's fits assumed
  // unless told otherwise.
  if (o.host_transport_gbps > 0) costs.transport_s_per_byte = 8.0 / (o.host_transport_gbps * 1e9);
  if (o.link_gbps > 0) costs.link_s_per_byte = 8.0 / (o.link_gbps * 1e9);
  costs.host_cores = o.host_cores;
  return costs;
}

/// The plan's output: JSON, an MPIJob or an sbatch script, to --output or stdout.
void write_plan(const cluster::Plan& plan, const PlanOptions& o, const RankMenu& menu = {}) {
  const std::string text = o.emit == "slurm" ? slurm_job(plan, o, menu)
                           : o.emit == "k8s" ? mpijob_manifest(plan, o, menu).dump(2) + "\n"
                                             : plan_json(plan, o, menu).dump(2) + "\n";
  if (o.output.empty())
    std::fwrite(text.data(), 1, text.size(), stdout);
  else
    kernels::write_file_atomically(o.output, text);
}

/// What a task planned on the CPU in one process (or over its partition's own ranks) refuses:
/// --parts (an estimated split), another device. `what` names the task.
void check_cpu_plan(const PlanOptions& o, const std::string& what) {
  if (o.parts > 1)
    throw UsageError("--parts " + std::to_string(o.parts) + ": halo plan estimates no split for " +
                     what + " (it plans the data or the partition the run reads)");
  if (o.device != "cpu")
    throw UsageError("--device " + o.device + ": halo plan predicts " + what + " on the CPU only");
  check_task(o);
}

/// Writes `plan` (a plan whose ranks are given, not searched) after checking that its largest
/// rank fits --memory-per-rank.
void write_fitting_plan(const cluster::Plan& plan, const PlanOptions& o) {
  if (o.memory_limit > 0 && plan.peak_host_bytes_per_rank > o.memory_limit)
    throw IoError("--memory-per-rank " + o.memory_per_rank + ": the largest of " +
                  std::to_string(plan.ranks) + " rank" + (plan.ranks == 1 ? "" : "s") + " needs " +
                  std::to_string(plan.peak_host_bytes_per_rank) + " bytes");
  write_plan(plan, o);
}

/// Heterogeneous classification in one process (a typed directory, which is read for its
/// counts: cluster::hetero_counts) or over a partition's ranks (every part is read for its
/// rank's counts, cluster::hetero_partition_counts).
int run_hetero_plan(const PlanOptions& o) {
  check_cpu_plan(o, "heterogeneous classification");
  if (was_given(o, "--model") && o.model != "rgcn" && o.model != "hgt")
    throw UsageError("--model " + o.model + ": '" + o.data.dataset +
                     "' is heterogeneous (a typed directory); use --model rgcn or hgt");
  const cluster::CostModel costs = plan_costs(o);
  check_output(o.output, "--output");
  cluster::HeteroCounts counts;
  runtime::TrainConfig config;
  if (!o.partitions.empty()) {
    const partition::PartitionMeta meta = partition::read_partition_meta(o.partitions);
    std::vector<std::string> relations;
    if (meta.hetero)
      for (const auto& r : meta.hetero->relations) relations.push_back(r.name);
    config = hetero_train_config(o, relations);
    runtime::check_config(config);
    counts = cluster::hetero_partition_counts(o.partitions, config);
  } else {
    const datasets::HeteroGraph g = load_hetero(kernels::Resources(kernels::Device::Cpu), o);
    std::vector<std::string> relations;
    for (const auto& r : g.relations) relations.push_back(r.name);
    config = hetero_train_config(o, relations);
    runtime::check_config(config);
    counts = cluster::hetero_counts(g, config);
  }
  const int threads = o.threads > 0 ? o.threads : std::max(1, costs.threads);
  write_fitting_plan(cluster::make_hetero_plan(counts, config, costs, o.device, threads), o);
  return 0;
}

/// Link prediction (a temporal dataset) in one process, or with --partitions over the ranks of
/// a snapshot partition series: the plan of its run on the snapshots, which are prepared for their
/// counts (cluster::link_counts, link_partition_counts).
int run_link_plan(const PlanOptions& o) {
  check_cpu_plan(o, "link prediction");
  const cluster::CostModel costs = plan_costs(o);
  check_output(o.output, "--output");
  const runtime::TrainConfig config = train_config(o);
  if (!o.partitions.empty() && config.link.model.kind != nn::TemporalKind::EvolveGcnO)
    throw UsageError("--model " + o.model +
                     ": link prediction across ranks trains evolvegcn-o (GCRN's per-node state "
                     "cannot follow the rows that migrate between snapshots)");
  const kernels::Resources host(kernels::Device::Cpu);
  const datasets::TemporalGraph g = load_link_events(o);
  const datasets::SnapshotConfig snapshots = link_snapshots(o);
  const runtime::TemporalShard shard =
      runtime::local_temporal_shard(host, g, snapshots, config.link.train_fraction);
  if (const std::string e = runtime::link_split_problem(shard.num_steps(), config.link); !e.empty())
    throw UsageError(e);
  const int threads = o.threads > 0 ? o.threads : std::max(1, costs.threads);
  cluster::LinkCounts counts;
  if (o.partitions.empty()) {
    counts = cluster::link_counts(shard);
  } else {
    const auto parts = static_cast<std::int32_t>(
        partition::read_snapshot_series_meta(o.partitions).config.num_parts);
    counts = cluster::link_partition_counts(
        shard,
        runtime::read_snapshot_owners(o.partitions, g.num_nodes(),
                                      datasets::snapshot_boundaries(g, snapshots), parts),
        parts);
  }
  write_fitting_plan(cluster::make_link_plan(counts, config, costs, o.device, threads), o);
  return 0;
}

int run_plan(PlanOptions& o) {
  if (o.task == "link") return run_link_plan(o);
  if (is_hetero_run(o)) return run_hetero_plan(o);
  check_homogeneous_run(o);
  const cluster::CostModel costs = plan_costs(o);
  check_output(o.output, "--output");
  const runtime::TrainConfig config = train_config(o);
  const int threads = o.threads > 0 ? o.threads : std::max(1, costs.threads);
  cluster::PlanInput in;
  // A partition of K parts: the plan of every rank count from 1 to K (the menu an elastic job's
  // scheduler chooses from), the chosen one below.
  RankMenu menu;
  partition::PartitionMeta meta;  // outlives the menu's plan_of
  if (!o.partitions.empty()) {
    meta = partition::read_partition_meta(o.partitions);
    const auto k = static_cast<std::int32_t>(meta.parts.size());
    if (o.parts > k)
      throw UsageError("--parts " + std::to_string(o.parts) + ": the partition has " +
                       std::to_string(k) + " parts; 1 to " + std::to_string(k) +
                       " ranks can train it");
    menu.parts = k;
    menu.plan_of = [&](int ranks) {
      return cluster::make_plan(partition_inputs(o.partitions, meta, {ranks}).front(), config,
                                costs, o.device, threads);
    };
    std::vector<std::int32_t> counts;
    for (std::int32_t r = 1; r <= k; r = k <= kFullMenu ? r + 1 : 2 * r) counts.push_back(r);
    if (counts.back() != k) counts.push_back(k);
    if (o.parts > 0 && std::find(counts.begin(), counts.end(), o.parts) == counts.end())
      counts.insert(std::upper_bound(counts.begin(), counts.end(), o.parts), o.parts);
    std::vector<cluster::PlanInput> inputs = partition_inputs(o.partitions, meta, counts);
    for (const cluster::PlanInput& input : inputs)
      menu.plans.push_back(cluster::make_plan(input, config, costs, o.device, threads));
    in = std::move(inputs.back());
  } else {
    std::filesystem::path store;
    in.graph = dataset_counts(o.data, store);
    // One process reading its rows from the store: sample some of its batches.
    if (o.probe_batches > 0 && cluster::reads_rows_from_store(in.graph, config, o.device))
      in.probe = cluster::probe_store_batches(
          store, config, static_cast<std::int64_t>(config.memory_budget / 4), o.probe_batches);
  }
  const auto need = [&](const cluster::Plan& p) {
    return o.device == "cuda" ? p.peak_gpu_bytes_per_rank : p.peak_host_bytes_per_rank;
  };
  cluster::Plan plan;
  if (o.memory_limit > 0) {
    // The smallest P whose every rank fits (with a partition, of the rank counts it lists).
    bool found = false;
    const int last = in.from_partition ? static_cast<int>(menu.plans.size()) : o.max_parts;
    for (int p = 1; p <= last && !found; ++p) {
      if (in.from_partition) {
        plan = menu.plans[static_cast<std::size_t>(p) - 1];
      } else {
        in.parts = cluster::estimate_parts(in.graph, p);
        in.parts_estimated = p > 1;
        plan = cluster::make_plan(in, config, costs, o.device, threads);
      }
      found = need(plan) <= o.memory_limit;
    }
    if (!found)
      throw IoError("--memory-per-rank " + o.memory_per_rank + ": no P" +
                    (in.from_partition
                         ? " (1 to the partition's " + std::to_string(menu.parts) + " parts)"
                         : " up to --max-parts " + std::to_string(o.max_parts)) +
                    " fits; the largest rank needs " +
                    std::to_string(plan.peak_host_bytes_per_rank) + " bytes");
  } else if (in.from_partition) {
    plan = menu.at(o.parts > 0 ? o.parts : menu.parts);
  } else {
    const int p = std::max(1, o.parts);
    in.parts = cluster::estimate_parts(in.graph, p);
    in.parts_estimated = p > 1;
    plan = cluster::make_plan(in, config, costs, o.device, threads);
  }
  write_plan(plan, o, menu);
  return 0;
}

}  // namespace

Command add_plan_command(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* sub = app.add_subcommand(
      "plan",
      "Predict a training run's resources per rank (memory, communication, checkpoint, epoch "
      "time) from the dataset's cache or a partition's meta.json, without training; as JSON or a "
      "Kubernetes MPIJob (docs/scheduler.md)");
  o->sub = sub;
  const std::function<void()> check_run = add_train_options(sub, *o);
  auto* parts = sub->add_option("--parts", o->parts,
                                "Ranks: of a split estimated without a partition (see "
                                "docs/scheduler.md for the estimate; default 1), or of "
                                "--partitions' K parts (1 to K, each rank a group of parts; "
                                "default K, and --emit slurm asks for a node range)")
                    ->check(integer_range(1, 1024));
  sub->add_option("--memory-per-rank", o->memory_per_rank,
                  "Find the smallest P whose every rank fits in SIZE (e.g. 16GiB, 512MiB; GPU "
                  "memory with --device cuda) and plan that run");
  sub->add_option("--max-parts", o->max_parts, "Largest P --memory-per-rank tries")
      ->check(integer_range(1, 1 << 20))
      ->capture_default_str();
  sub->add_option("--calibration", o->calibration,
                  "Calibration file of `halo calibrate` (default: $HALO_CALIBRATION, else "
                  "<data dir>/calibration.json)")
      ->check(CLI::ExistingFile);
  sub->add_option("--link-latency-us", o->link_latency_us,
                  "One-way latency of the link between ranks, microseconds, instead of the "
                  "calibrated one (what the in-step messages add to it is kept)")
      ->check(CLI::Range(0.0, 1e7));
  sub->add_option("--link-gbps", o->link_gbps,
                  "Bandwidth of the link between ranks, Gb/s, instead of the calibrated one")
      ->check(CLI::Range(1e-6, 1e6));
  sub->add_option("--host-cores", o->host_cores,
                  "Cores all ranks share (emulated hosts on one machine): compute slows by "
                  "ranks x threads / cores when that exceeds 1 (default: a core per thread)")
      ->check(integer_range(1, 1 << 20));
  sub->add_option("--host-transport-gbps", o->host_transport_gbps,
                  "With --host-cores: the rate, Gb/s, at which the host's cores move message "
                  "bytes at each end besides the link's time (TCP between emulated hosts: an "
                  "unshaped link's throughput); where the ranks' threads fill the cores, that CPU "
                  "work adds to the exchange and cannot hide (default: the calibration's, as "
                  "halo calibrate --host-transport-gbps was told; none over shared memory)")
      ->check(CLI::Range(1e-6, 1e6));
  sub->add_option("--probe-batches", o->probe_batches,
                  "One process reading its feature rows from a store larger than "
                  "--memory-budget: batches sampled on the store's graph before planning (the "
                  "run's draws), whose blocks and rows read replace the modelled ones; 0: model "
                  "only (docs/scheduler.md, \"Batch probe\")")
      ->check(integer_range(0, 1 << 20))
      ->capture_default_str();
  sub->add_option("--emit", o->emit,
                  "json (the plan), k8s (a Kubeflow MPIJob v2beta1 manifest, as JSON) or slurm "
                  "(an sbatch script that requeues itself when preempted; docs/checkpoints.md)")
      ->check(CLI::IsMember({"json", "k8s", "slurm"}))
      ->capture_default_str();
  std::vector<CLI::Option*> slurm_only = {
      sub->add_option("--tasks-per-node", o->tasks_per_node, "slurm: ranks per node")
          ->check(integer_range(1, 4096))
          ->capture_default_str(),
      sub->add_option("--slurm-partition", o->slurm_partition,
                      "slurm: the partition (queue) to submit to (default: the cluster's)"),
      sub->add_option("--slurm-output", o->slurm_output,
                      "slurm: the job's log, appended across requeues")
          ->capture_default_str(),
      sub->add_option("--launcher", o->launcher, "slurm: MPICH's mpiexec (Hydra) to start ranks")
          ->capture_default_str(),
      sub->add_option("--checkpoint-dir", o->checkpoint_dir,
                      "slurm (required): the job's checkpoint directory; the job resumes from "
                      "it when requeued")};

  sub->add_option("train_args", o->extra_train_args,
                  "slurm: further `halo train` arguments, after `--` (e.g. -- --json r.json)");
  sub->add_option("--output", o->output,
                  "Write to FILE instead of standard output ('-': standard output)");
  sub->add_option("--image", o->image, "k8s: the container image holding halo")
      ->capture_default_str();
  sub->add_option("--job-name", o->job_name, "k8s: the MPIJob's name")->capture_default_str();
  sub->callback([o, check_run, parts, sub, slurm_only] {
    check_run();
    if (o->output == "-") o->output.clear();  // standard output, as without --output
    if (o->emit == "slurm" && o->checkpoint_dir.empty())
      throw CLI::ValidationError("--emit slurm",
                                 "needs --checkpoint-dir (a requeued job resumes from it)");
    if (o->emit != "slurm") {
      for (const CLI::Option* opt : slurm_only)
        if (opt->count() > 0)
          throw CLI::ValidationError(opt->get_name(), "applies to --emit slurm only");
      if (!o->extra_train_args.empty())
        throw CLI::ValidationError("--", "train arguments apply to --emit slurm only");
    }
    if (parts->count() > 0 && sub->get_option("--memory-per-rank")->count() > 0)
      throw CLI::ValidationError("--parts", "--memory-per-rank chooses P; drop --parts");
    if (!o->memory_per_rank.empty()) {
      const auto b = parse_bytes(o->memory_per_rank);
      if (!b)
        throw CLI::ValidationError(
            "--memory-per-rank",
            "expected a size such as 16GiB or 512MiB, got '" + o->memory_per_rank + "'");
      o->memory_limit = *b;
    }
  });
  return {sub, [o] { return run_plan(*o); }};
}

}  // namespace halo::cli
