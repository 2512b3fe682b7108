#pragma once
// The resource plan of a run: per-rank memory, communication, checkpoint size and epoch time,
// predicted from counts (a dataset cache's or a partition's meta.json) and measured costs.
//
// This is the one performance model of the project (`halo plan` and the scaling studies use it):
// every time is alpha + beta x work for a measured (alpha, beta) per kind of work
// (docs/scheduler.md, "The model"). Nothing here builds or reads a graph.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <halo/cluster/batch_probe.hpp>
#include <halo/datasets/store/store.hpp>
#include <halo/partition/formats/part_group.hpp>
#include <halo/runtime/runtime.hpp>

namespace halo::cluster {

/// One point of the working-set rule (CostModel::full_graph_steps, mini_batch_steps): the step
/// scale measured on a calibration run whose working set was `working_set_bytes`.
struct StepScalePoint {
  std::int64_t working_set_bytes = 0;
  double scale = 1;
  /// Mini-batch: the producer's scale (its sampling and gathering as measured on that run,
  /// over what the sampler and gather terms predict); the full graph has no producer.
  double producer = 1;
};

/// The three products of a layer's transform (rows x in inputs, in x out weights): the forward
/// X W, the weight gradient X^T dY and the input gradient dY W^T.
enum class GemmPass { Forward, WeightGrad, InputGrad };
inline constexpr GemmPass kGemmPasses[] = {GemmPass::Forward, GemmPass::WeightGrad,
                                           GemmPass::InputGrad};

/// One point of the dense products' rate table (CostModel::gemm_shapes): seconds per
/// floating-point operation of `pass` for a layer of `in` -> `out` widths, measured by `halo
/// calibrate` on kGemmCalibrationRows rows.
struct GemmPoint {
  GemmPass pass = GemmPass::Forward;
  std::int64_t in = 1, out = 1;
  double s_per_flop = 0;
};

/// The rows and the widths of the grid `halo calibrate` measures the products' rates on.
inline constexpr std::int64_t kGemmCalibrationRows = 16384;
inline constexpr std::int64_t kGemmCalibrationWidths[] = {16, 64, 256};

/// What the collectives inside a training step cost with `ranks` ranks on this host, fitted by
/// `mpiexec -n <ranks> halo calibrate` on short distributed runs of the Trainer on a generated
/// graph. The latencies carry what the ping-pong alone does not (ranks and producer threads
/// sharing the cores: with more ranks than cores, a message waits for its peer to get one).
struct CollectiveCosts {
  int ranks = 2;
  /// Latency of one message of a collective inside a step (full graph: the halo exchange and
  /// the all-reduce; mini-batch: also the sampler's and the fetches' all-to-alls); 0 = the
  /// ping-pong's (link_alpha_s).
  double full_graph_message_s = 0;
  double mini_batch_message_s = 0;
  /// Mini-batch: seconds per remote input row a batch fetches, besides its bytes (on the link,
  /// and through the transport's CPU work: transport_cpu_s_per_byte): the owners' id lookups,
  /// gathering, packing and unpacking, from the fetch time and rows of the same runs; 0 = none.
  double mini_batch_fetch_row_s = 0;
};

/// The measured costs of this machine (`halo calibrate`, docs/scheduler.md). Every term is
/// seconds = alpha + beta x work; the defaults are conservative guesses, used (and reported as
/// "uncalibrated") when no calibration file exists.
struct CostModel {
  /// Dense products (BLAS sgemm): seconds per call and per floating-point operation (2 m n k).
  double gemm_alpha_s = 5e-6;
  double gemm_s_per_flop = 1.0 / 20e9;
  /// The rate per product and layer shape, a full grid of in x out widths per pass (BLAS's
  /// rate moves with them: a narrow output runs at half the rate of a wide one on this
  /// machine); a layer's rate is interpolated linearly in log(in) and log(out) between the
  /// grid's widths around its own, held at the grid's edge outside them (gemm_s_per_flop_of).
  /// Empty: gemm_s_per_flop for every product.
  std::vector<GemmPoint> gemm_shapes;
  /// CSR x dense products: per call, and per stored entry and per byte of its gathered row
  /// (columns x 4 bytes) when the row is in the caches (measured over and over on an input of
  /// spmm_footprint_bytes, which stays in them) ...
  double spmm_alpha_s = 5e-6;
  double spmm_s_per_edge = 2e-9;
  double spmm_s_per_byte = 1.0 / 4e9;
  double spmm_footprint_bytes = 0;
  /// ... and when it is not (measured on random graphs without hubs whose input is 16 times
  /// that, solved for the entries that miss). 0: every entry at the in-cache rates. Which
  /// entries miss: spmm_miss_share.
  double spmm_streaming_s_per_edge = 0;
  double spmm_streaming_s_per_byte = 0;
  /// Element-wise passes (ReLU, dropout, bias, loss, Adam): seconds per call and per byte read
  /// or written.
  double elementwise_alpha_s = 2e-6;
  double elementwise_s_per_byte = 1.0 / 8e9;
  /// The same pass over data that stay in the caches (kCachedPassBytes read and written in all,
  /// measured over and over): seconds per byte; 0 = the streaming rate. Adam's passes, which
  /// the plan costs outside the step scale, run at the rate of their footprint (RankPlan).
  double elementwise_cached_s_per_byte = 0;
  /// The loss (log-softmax, negative log-likelihood and its gradient): seconds per cell (row x
  /// class) of the rows it scores, its exponentials; the gradient's zeroing of every output
  /// row is an element-wise pass.
  double loss_s_per_cell = 5e-9;
  /// Gathering a batch's input rows (the producer's gather with the input dropout, from a
  /// feature matrix beyond the caches): seconds per row and per byte gathered.
  double gather_s_per_row = 0;
  double gather_s_per_byte = 2.0 / 8e9;
  /// The neighbour sampler: seconds per batch and per sampled edge.
  double sampler_alpha_s = 2e-5;
  double sampler_s_per_edge = 5e-8;
  /// The link between ranks: latency per message and seconds per byte (ping-pong).
  double link_alpha_s = 2e-6;
  double link_s_per_byte = 1.0 / 2e9;
  /// Writing a checkpoint: seconds per byte written and fsynced.
  double disk_s_per_byte = 1.0 / 200e6;
  /// Measured over modelled time of a whole training step in one process, fitted by `halo
  /// calibrate` on short runs of the Trainer: the work the kernel terms leave out (dropout's
  /// hashing, OpenMP regions, a step's kernels evicting each other's data, the machine's
  /// sharing). Scales the compute terms but the dense products and Adam (costed as measured:
  /// RankPlan::dense_s); the mini-batch producer has its own scale (StepScalePoint::producer).
  /// Fitted on random graphs without hubs, where the sparse products' terms hold (a skewed
  /// graph's hubs staying cached are in spmm_miss_share; what the terms still miss on skewed
  /// graphs is full_graph_skewed_steps). The working-set rule: one point per
  /// calibration graph, of growing size (2^12, 2^14, 2^16, 2^18 and 2^19 nodes by default, for
  /// both modes); a rank's scale
  /// is interpolated linearly in log(working set) between the two points around its working set
  /// (RankPlan::working_set_bytes) and held at the first or last point's outside them
  /// (docs/scheduler.md). No points: 1 (uncalibrated).
  std::vector<StepScalePoint> full_graph_steps;
  std::vector<StepScalePoint> mini_batch_steps;
  /// The full-graph rule again on skewed graphs (R-MAT, the same sizes), whose steps the terms
  /// underpredict more (a hub's row stays in the caches but the permuted ids scatter the hubs
  /// over every page). A graph's full-graph scale lies between the two rules by its hub share
  /// (hub_share: the share of its entries on its 1 % of rows of highest degree), linearly from
  /// full_graph_hub_share (full_graph_steps) to full_graph_skewed_hub_share (these), held at the
  /// ends. Empty: full_graph_steps for every graph. (The mini-batch scales came out alike on both
  /// kinds of graph: one rule.)
  std::vector<StepScalePoint> full_graph_skewed_steps;
  double full_graph_hub_share = 0;
  double full_graph_skewed_hub_share = 0;
  /// Mini-batch: seconds per batch the kernel terms leave out (the producer thread's hand-over,
  /// per-block set-up), fitted with epoch_alpha_s from three batch sizes on the smallest
  /// calibration graph.
  double batch_alpha_s = 0;
  /// Mini-batch: seconds per epoch the kernel terms leave out (the producer thread's start and
  /// join; the pipeline's fill and drain are modelled).
  double epoch_alpha_s = 0;
  /// The collectives inside a training step with several ranks, per number of ranks on this
  /// host, in growing ranks (`mpiexec -n R halo calibrate` fits the entry for R); empty: the
  /// ping-pong's latency and no per-row cost. collective_at(ranks) reads them.
  std::vector<CollectiveCosts> collectives;
  /// The entry for `ranks`; between two entries each cost log-linear in the ranks, outside
  /// them the nearest entry's; {ranks} with no costs when there are none.
  CollectiveCosts collective_at(int ranks) const;
  /// Cores all ranks share (emulated hosts on one machine; `halo plan --host-cores`, not
  /// calibrated): the compute and sampling terms are multiplied by
  /// max(1, ranks x threads / host_cores), and the mini-batch producer threads overlap the
  /// training threads only if ranks x (threads + 1) <= host_cores. 0: every thread has a core.
  int host_cores = 0;
  /// With host_cores: CPU seconds the host's cores spend per message byte at each end besides
  /// the link's own time (TCP's stack between emulated hosts that share cores; not measured:
  /// the rate `halo calibrate --host-transport-gbps` was told, which its fits assumed, or `halo
  /// plan --host-transport-gbps`). 0: none (over shared memory the link's per-byte time is the
  /// copies themselves). Where the ranks' threads fill the cores (ranks x threads >=
  /// host_cores) that work runs on cores that compute: transport_cpu_s_per_byte.
  double transport_s_per_byte = 0;
  /// Resident set of a `halo` process before it loads data (libraries, thread stacks), and
  /// what an MPI rank adds to it.
  std::int64_t process_base_bytes = 48ll << 20;
  std::int64_t mpi_rank_extra_bytes = 16ll << 20;
  /// Where the figures come from: the calibrating machine's threads and host name, and
  /// whether they were measured at all.
  int threads = 0;
  std::string host;
  bool calibrated = false;
  /// Whether the link terms were measured (`mpiexec -n 2 halo calibrate`), not defaults.
  bool link_calibrated = false;
};

/// The footprint (bytes read and written) of the element-wise pass `halo calibrate` times for
/// the in-cache rate, and of the one it times for the streaming rate: a pass over less than
/// the first runs at the in-cache rate, over more than the second at the streaming one, and
/// between the two at a rate interpolated linearly in log(footprint).
inline constexpr double kCachedPassBytes = 8.0 * (1 << 17);     // 1 MiB
inline constexpr double kStreamingPassBytes = 8.0 * (1 << 24);  // 128 MiB

/// MPICH's all-reduce runs recursive doubling up to this many bytes and Rabenseifner's
/// reduce-scatter + all-gather above (MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE's default).
inline constexpr double kShortAllreduceBytes = 2048;

/// Seconds of one all-reduce of `bytes` over `ranks`, messages costing `alpha` each plus their
/// bytes over the link (m.link_s_per_byte), as MPICH schedules it (plan.cpp).
double allreduce_s(const CostModel& m, double alpha, double bytes, int ranks);
/// The share of a core a rank's thread gets where the ranks share host_cores: max(1, ranks x
/// threads / host_cores); 1 with host_cores 0 (a core per thread).
double core_share(const CostModel& m, int ranks, int threads);
/// CPU seconds a rank's messages cost it per byte sent or received where the ranks' threads
/// fill the host's cores (ranks x threads >= host_cores): transport_s_per_byte at the share of
/// a core the rank gets (core_share). That work runs on cores that
/// compute, so it adds to the exchange and cannot hide; 0 where the ranks have cores to spare
/// or a core per thread (host_cores 0), or one rank.
double transport_cpu_s_per_byte(const CostModel& m, int ranks, int threads);
/// Seconds a rank is charged per byte of remote feature rows it fetches: the link's, and the
/// transport's CPU work at both ends (a rank serves its peers about as many rows as it fetches:
/// a balanced partition's all-to-all is symmetric).
double fetched_byte_s(const CostModel& m, int ranks, int threads);

/// Seconds per floating-point operation of a layer's product `pass` with widths `in` -> `out`:
/// CostModel::gemm_shapes' rule, else gemm_s_per_flop.
double gemm_s_per_flop_of(const CostModel& m, GemmPass pass, double in, double out);

struct GraphCounts;
/// The share of a graph's entries in its `fraction` (0..1) most connected rows, from S's degree
/// histogram (a log2 bucket's rows at their mean degree); without one every row has the mean
/// degree: `fraction`.
double hot_entry_share(const GraphCounts& g, double fraction);
/// The share of a CSR x dense product's `entries` entries, gathering `cols`-wide rows of a dense
/// input of `rows` rows, whose row is not in the caches: none while the input fits in
/// spmm_footprint_bytes (it stays there from the op that wrote it), else those whose row is
/// not among the spmm_footprint_bytes of rows gathered most often (1 - hot_entry_share of
/// `skew`'s rows at that fraction; nullptr: every row as often, 1 - the fraction).
double spmm_miss_share(const CostModel& m, double entries, double cols, double rows,
                       const GraphCounts* skew);
/// Seconds of that product: per call, its hits at the in-cache rates, its misses at the
/// streaming ones.
double spmm_seconds(const CostModel& m, double entries, double cols, double rows,
                    const GraphCounts* skew);

/// Seconds of one dense product `pass` of a layer of `in` -> `out` widths over `rows` rows (2
/// rows x in x out floating-point operations at gemm_s_per_flop_of's rate, plus a call).
double gemm_seconds(const CostModel& m, GemmPass pass, double rows, double in, double out);
/// Seconds of `calls` element-wise passes over `bytes` bytes in all, at the streaming rate.
double elementwise_seconds(const CostModel& m, double bytes, double calls = 1);

/// Seconds per byte of an element-wise pass whose data span `footprint` bytes.
double elementwise_s_per_byte(const CostModel& m, double footprint);

/// The calibration file's default place: $HALO_CALIBRATION, else <data dir>/calibration.json
/// (the data directory of datasets::default_data_dir()).
std::filesystem::path default_calibration_path();

/// Reads a calibration file written by write_cost_model (halo::IoError naming the file and key).
CostModel read_cost_model(const std::filesystem::path& path);
/// Writes `m` as JSON (docs/scheduler.md, "Calibration file") atomically.
void write_cost_model(const CostModel& m, const std::filesystem::path& path);

/// What the plan needs to know about the whole graph.
struct GraphCounts {
  std::string dataset;
  std::int64_t num_nodes = 0;
  /// Entries of the training graph S (A ∪ Aᵀ without self-loops, both directions) and its
  /// largest row (partition::PartitionMeta's fields of the same names).
  std::int64_t training_edges = 0;
  std::int64_t max_degree = 0;
  /// S's rows by degree (datasets::DegreeHistogram); empty: every row has the mean degree.
  datasets::DegreeHistogram degree_histogram;
  /// Entries of the input graph as stored, and whether it has edge values.
  std::int64_t input_edges = 0;
  bool weighted = false;
  std::int64_t num_features = 0;
  /// Sparse features: stored entries (0 for dense features).
  bool sparse_features = false;
  std::int64_t feature_nnz = 0;
  std::int32_t num_classes = 0;
  std::int64_t num_train = 0;
  std::int64_t num_val = 0;
  std::int64_t num_test = 0;
  /// Bytes on disk of what the run reads: the store's arrays, or the partition's part files (0:
  /// not known).
  std::int64_t disk_bytes = 0;
  /// A partition whose parts reference a store's float32 features (partition::PartitionMeta::
  /// feature_store): a rank whose part is larger than the budget reads its rows from the file.
  bool store_features = false;
};

/// One rank's part: a partition's group of parts (partition::group_counts), or estimated
/// (estimate_parts: no cut entries, -1, which the plan estimates as num_edges x halo / (owned +
/// halo); no file, 0 bytes).
using PartCounts = partition::GroupCounts;

/// Where the counts come from.
struct PlanInput {
  GraphCounts graph;
  /// One entry per rank: from a partition's meta.json (measured), or estimated by
  /// estimate_parts.
  std::vector<PartCounts> parts;
  /// True when `parts` were estimated (no partition given); the plan says so.
  bool parts_estimated = false;
  /// A rank loads its part from a partition directory (else: the dataset, one process).
  bool from_partition = false;
  /// One process on a dataset's store: batches sampled before planning (probe_store_batches).
  /// Their means replace the modelled blocks, their largest the modelled envelope, their rows
  /// outside the row cache the modelled rows read from the store. None: modelled.
  StoreProbe probe;
};

/// Whether one process of `config` on the dataset `g` (a store) reads its feature rows from the
/// store's file rather than memory, as the run decides it: mini-batch on the CPU, dense rows,
/// and the store's arrays larger than config.memory_budget.
bool reads_rows_from_store(const GraphCounts& g, const runtime::TrainConfig& config,
                           const std::string& device);

/// The counts of the run `shard` is one rank of, from the shard itself (before training: the
/// Trainer takes its features): the whole graph's sizes, this rank's part, and every other
/// rank's part taken to be like this one (a rank knows only its own). What `halo train`
/// predicts its own epoch time and peak from (the predicted-vs-measured metrics).
PlanInput shard_plan_input(const runtime::Shard& shard);

/// Parts of a P-way split estimated without partitioning: owned = n / P (rounded up), edges
/// and training nodes in proportion, and the halo of a random assignment, the upper bound a
/// good partitioner stays below:
///   halo = (n - owned) x (1 - (1 - 1/P)^d̄)...(see docs/scheduler.md) with d̄ = edges / n,
/// i.e. a remote node is in the halo when one of its d̄ neighbours is owned here.
/// P = 1 is the whole graph (no halo).
std::vector<PartCounts> estimate_parts(const GraphCounts& g, int parts);

/// Named byte counts of one rank.
struct MemoryItem {
  std::string name;
  std::int64_t bytes = 0;
};

/// The plan of one rank.
struct RankPlan {
  int rank = 0;
  /// Breakdown, host and device (see docs/scheduler.md for each term).
  std::vector<MemoryItem> host;
  std::vector<MemoryItem> gpu;
  std::int64_t peak_host_bytes = 0;
  std::int64_t peak_gpu_bytes = 0;
  /// Bytes of the data this rank reads from disk, and temporary bytes while loading.
  std::int64_t dataset_bytes = 0;
  std::int64_t scratch_bytes = 0;
  /// A store read from its files (larger than the budget): feature rows read per epoch by the
  /// batches, and by one evaluation (its first layer's rows and, spilled, its hidden layers).
  std::int64_t disk_read_bytes_per_epoch = 0;
  std::int64_t evaluation_read_bytes = 0;
  /// Communication this rank sends per epoch.
  std::int64_t halo_exchange_bytes = 0;
  std::int64_t feature_fetch_bytes = 0;
  std::int64_t allreduce_bytes = 0;
  /// Predicted seconds per epoch and its terms.
  double compute_s = 0;
  double dense_s = 0;     // of compute_s: the dense products and Adam (outside the step scale)
  double sampling_s = 0;  // the producer's sampling and gathering
  double exchange_s = 0;  // transfer time of the halo exchange / feature fetches
  /// The parts of sampling_s and exchange_s that overlap (with the owned rows' aggregation,
  /// or with the training thread's compute) leaves in the epoch.
  double exposed_sampling_s = 0;
  double exposed_exchange_s = 0;
  double allreduce_s = 0;
  double epoch_s = 0;
  /// Bytes of this rank's data a step works over (the host or device terms but `process`):
  /// what the step scale is interpolated on (CostModel, the working-set rule).
  std::int64_t working_set_bytes = 0;
  double step_scale = 1;
};

/// The plan of a run.
struct Plan {
  std::string dataset;
  std::int64_t disk_bytes = 0;  // GraphCounts::disk_bytes
  std::string mode;             // "full-graph" or "mini-batch"
  std::string model;  // the model's name where the plan knows it better than the command line
  std::string device;
  int ranks = 1;
  int threads = 0;
  int epochs = 0;
  std::int64_t parameters = 0;
  std::int64_t batches_per_epoch = 1;
  int prefetch = 0;  // mini-batch: batches prepared ahead (--prefetch auto resolved; 0 on a GPU)
  std::int64_t sampler_envelope_bytes = 0;
  std::vector<RankPlan> per_rank;
  /// Maxima over the ranks (the scheduler's request) and totals.
  std::int64_t peak_host_bytes_per_rank = 0;
  std::int64_t peak_gpu_bytes_per_rank = 0;
  std::int64_t comm_bytes_per_epoch = 0;  // sent by all ranks
  double epoch_seconds = 0;               // the slowest rank's
  double train_seconds = 0;               // epochs x epoch_seconds + evaluation
  std::int64_t checkpoint_bytes = 0;
  double checkpoint_seconds = 0;
  bool parts_estimated = false;
  /// Batches PlanInput::probe sampled whose measures the plan took (training and evaluation).
  std::int64_t probed_batches = 0;
  bool calibrated = false;
  bool link_calibrated = false;
};

/// Bytes of a checkpoint of `parameters` floats: the parameters, Adam's two moments, the best
/// epoch's parameters (4 bytes each: 16 x parameters) plus 4 KiB of metadata (epoch, step, RNG
/// keys, partition checksum, manifest).
std::int64_t checkpoint_bytes(std::int64_t parameters);

/// Kubernetes' default termination grace period: the time a preempted pod has to checkpoint.
inline constexpr double kGracePeriodSeconds = 30;

/// The plan of `config` on `in` over `in.parts.size()` ranks, `threads` threads per rank, on
/// `device` ("cpu" or "cuda"). halo::LogicError on an invalid config (check_config) or counts.
Plan make_plan(const PlanInput& in, const runtime::TrainConfig& config, const CostModel& costs,
               const std::string& device, int threads);

/// The step scale of a rank whose working set is `working_set` bytes (CostModel's working-set
/// rule): the first point's scale below its working set, the last point's above, between two
/// neighbouring points linear in log(working set); 1 without points. A full-graph step's on a
/// graph of `hub_share` (hub_share(g)) lies between the rule of graphs without hubs and the
/// skewed graphs' (CostModel::full_graph_skewed_steps).
double step_scale(const CostModel& m, bool mini_batch, double working_set, double hub_share);
/// The share of g's entries on its 1 % of rows of highest degree (hot_entry_share).
double hub_share(const GraphCounts& g);
/// The mini-batch producer's scale at `working_set` (the same rule over the points' `producer`).
double producer_scale(const CostModel& m, double working_set);

/// Parameters of the model `config.model` describes for `in_features` inputs and `classes`
/// outputs (built on the CPU and counted, so the count cannot drift from the layers').
std::int64_t count_parameters(const runtime::TrainConfig& config, std::int64_t in_features,
                              std::int32_t classes);

}  // namespace halo::cluster
