// `halo plan` and `halo calibrate` as a user runs them: the documented JSON keys, the MPIJob
// manifest against the v2beta1 schema, the inverse question (--memory-per-rank), usage errors;
// `halo train --metrics-file` checked by promtool; and, under mpiexec, the predicted exchange
// bytes against the ones a 2-rank run measures.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "support/testing.hpp"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Outcome = halo::testing::CommandOutcome;

/// The JSON-schema keywords tests/tools/mpijob_v2beta1.schema.json uses: type, enum, required,
/// properties, additionalProperties (false or a schema), items, minItems, minimum, pattern, and
/// $ref to "#/definitions/NAME". Appends one line per violation, naming the JSON path.
void validate(const json& v, const json& schema, const json& root, const std::string& path,
              std::vector<std::string>& errors) {
  if (schema.contains("$ref")) {
    const std::string ref = schema["$ref"];
    const std::string prefix = "#/definitions/";
    ASSERT_EQ(ref.rfind(prefix, 0), 0u) << ref;
    validate(v, root["definitions"][ref.substr(prefix.size())], root, path, errors);
    return;
  }
  if (schema.contains("type")) {
    const std::string t = schema["type"];
    const bool ok = (t == "object" && v.is_object()) || (t == "array" && v.is_array()) ||
                    (t == "string" && v.is_string()) || (t == "integer" && v.is_number_integer()) ||
                    (t == "boolean" && v.is_boolean()) || (t == "number" && v.is_number());
    if (!ok) {
      errors.push_back(path + ": expected " + t + ", got " + v.dump());
      return;
    }
  }
  if (schema.contains("enum") &&
      std::find(schema["enum"].begin(), schema["enum"].end(), v) == schema["enum"].end())
    errors.push_back(path + ": " + v.dump() + " is not one of " + schema["enum"].dump());
  if (schema.contains("minimum") && v.is_number() && v.get<double>() < schema["minimum"])
    errors.push_back(path + ": below the minimum " + schema["minimum"].dump());
  if (schema.contains("pattern") && v.is_string() &&
      !std::regex_search(v.get<std::string>(), std::regex(schema["pattern"].get<std::string>())))
    errors.push_back(path + ": " + v.dump() + " does not match " + schema["pattern"].dump());
  if (v.is_object()) {
    for (const auto& r : schema.value("required", json::array()))
      if (!v.contains(r)) errors.push_back(path + ": missing required field " + r.dump());
    const json props = schema.value("properties", json::object());
    for (const auto& [key, value] : v.items()) {
      const std::string p = path + "." + key;
      if (props.contains(key)) {
        validate(value, props[key], root, p, errors);
      } else if (schema.contains("additionalProperties")) {
        const json& extra = schema["additionalProperties"];
        if (extra.is_boolean() && !extra.get<bool>())
          errors.push_back(p + ": not a field of the schema");
        else if (extra.is_object())
          validate(value, extra, root, p, errors);
      }
    }
  }
  if (v.is_array()) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<std::size_t>())
      errors.push_back(path + ": fewer than " + schema["minItems"].dump() + " items");
    if (schema.contains("items"))
      for (std::size_t i = 0; i < v.size(); ++i)
        validate(v[i], schema["items"], root, path + "[" + std::to_string(i) + "]", errors);
  }
}

std::vector<std::string> schema_errors(const json& v) {
  const json schema = json::parse(halo::testing::read_file(
      fs::path(HALO_TEST_SOURCE_DIR) / "tests" / "tools" / "mpijob_v2beta1.schema.json"));
  std::vector<std::string> errors;
  validate(v, schema, schema, "$", errors);
  return errors;
}

class PlanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    // A private data directory: Cora "downloaded" from a file:// mirror of the shared raw
    // files, so the store plan reads is built by this test (no network).
    fs::create_directories(m_dir / "mirror" / "cora");
    for (const auto& e : fs::directory_iterator(shared() / "planetoid" / "raw"))
      fs::create_symlink(e.path(), m_dir / "mirror" / "cora" / e.path().filename());
  }
  std::string env() const {
    return "env HALO_DATA_DIR=" + (m_dir / "data").string() + " HALO_DATASET_MIRROR=file://" +
           (m_dir / "mirror").string() + " HALO_CALIBRATION=" + (m_dir / "none.json").string() +
           " ";
  }
  Outcome halo(const std::string& args) const {
    return halo::testing::run_command(env() + HALO_TEST_BINARY + " " + args, m_dir);
  }
  static fs::path shared() { return halo::testing::datasets_dir(); }
  static std::string cora_dir() { return (shared() / "planetoid" / "cora").string(); }
  /// A partition of Cora into `parts` parts.
  fs::path partition(int parts) const {
    const fs::path out = m_dir / ("p" + std::to_string(parts));
    if (!fs::exists(out)) {
      const Outcome r = halo("partition --dataset " + cora_dir() + " --parts " +
                             std::to_string(parts) + " --out " + out.string());
      EXPECT_EQ(r.code, 0) << r.err;
    }
    return out;
  }
  json plan(const std::string& args) const {
    const Outcome r = halo("plan " + args);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code == 0 ? json::parse(r.out) : json();
  }
  const halo::testing::TempDir m_temp;
  const fs::path m_dir = m_temp.path();
};

TEST_F(PlanCli, PlanOfAPartitionHasTheDocumentedKeys) {
  const json j = plan("--partitions " + partition(2).string());
  for (const char* key :
       {"peak_host_bytes_per_rank", "peak_gpu_bytes_per_rank", "epoch_seconds",
        "comm_bytes_per_epoch", "checkpoint_bytes", "checkpoint_seconds",
        "checkpoint_fits_grace_period", "train_seconds", "parameters", "ranks", "per_rank"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["ranks"], 2);
  EXPECT_EQ(j["parts"], "partition");
  EXPECT_EQ(j["calibrated"], false);
  ASSERT_EQ(j["per_rank"].size(), 2u);
  std::int64_t peak = 0;
  for (const json& r : j["per_rank"]) {
    std::int64_t sum = 0;
    for (const char* item : {"process", "part", "features", "halo", "feature_cache",
                             "sampler_envelope", "model_optimizer", "activations", "workspace"}) {
      ASSERT_TRUE(r["host_bytes"].contains(item)) << item;
      sum += r["host_bytes"][item].get<std::int64_t>();
    }
    EXPECT_GE(r["peak_host_bytes"].get<std::int64_t>(), sum);
    EXPECT_GT(r["comm_bytes_per_epoch"]["halo_exchange"].get<std::int64_t>(), 0);
    peak = std::max(peak, r["peak_host_bytes"].get<std::int64_t>());
  }
  EXPECT_EQ(j["peak_host_bytes_per_rank"].get<std::int64_t>(), peak);
}

// A partition of K parts trains on 1 to K ranks: the plan lists every rank count (the menu of an
// elastic job), plans any of them with --parts, chooses the fewest that fit --memory-per-rank,
// and writes a node-range sbatch script. The exchange it predicts for 3 ranks of 8 parts (groups
// of parts) is the one a 3-rank run measures.
TEST_F(PlanCli, RankMenuOfAnEightPartPartition) {
  const fs::path p = partition(8);
  const json j = plan("--partitions " + p.string());
  EXPECT_EQ(j["ranks"], 8);
  ASSERT_EQ(j["rank_menu"].size(), 8u);
  for (int r = 1; r <= 8; ++r) {
    const json& e = j["rank_menu"][static_cast<std::size_t>(r - 1)];
    EXPECT_EQ(e["ranks"], r);
    EXPECT_GT(e["peak_host_bytes_per_rank"].get<std::int64_t>(), 0);
    EXPECT_GT(e["epoch_seconds"].get<double>(), 0);
  }
  EXPECT_EQ(j["rank_menu"][0]["comm_bytes_per_epoch"], 0);  // one rank sends nothing
  EXPECT_EQ(j["rank_menu"][7]["peak_host_bytes_per_rank"], j["peak_host_bytes_per_rank"]);

  const json three = plan("--partitions " + p.string() + " --parts 3");
  EXPECT_EQ(three["ranks"], 3);
  ASSERT_EQ(three["per_rank"].size(), 3u);
  EXPECT_EQ(three["peak_host_bytes_per_rank"], j["rank_menu"][2]["peak_host_bytes_per_rank"]);
  const fs::path out = m_dir / "r3.json";
  const Outcome r = halo::testing::run_command(
      env() + "OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 " + HALO_TEST_MPIEXEC + " -n 3 " +
          HALO_TEST_BINARY + " train --partitions " + p.string() + " --epochs 2 --json " +
          out.string(),
      m_dir);
  ASSERT_EQ(r.code, 0) << r.err;
  std::int64_t predicted = 0;
  for (const json& rank : three["per_rank"])
    predicted += rank["comm_bytes_per_epoch"]["halo_exchange"].get<std::int64_t>();
  EXPECT_EQ(
      predicted,
      json::parse(halo::testing::read_file(out))["exchange_bytes_per_epoch"].get<std::int64_t>());

  // The fewest ranks whose largest fits.
  const std::int64_t limit = j["rank_menu"][2]["peak_host_bytes_per_rank"].get<std::int64_t>();
  const json fit =
      plan("--partitions " + p.string() + " --memory-per-rank " + std::to_string(limit));
  EXPECT_LE(fit["ranks"].get<int>(), 3);
  EXPECT_LE(fit["peak_host_bytes_per_rank"].get<std::int64_t>(), limit);
  for (int q = 1; q < fit["ranks"].get<int>(); ++q)
    EXPECT_GT(j["rank_menu"][static_cast<std::size_t>(q - 1)]["peak_host_bytes_per_rank"]
                  .get<std::int64_t>(),
              limit);

  // sbatch: a node range without --parts, a fixed count with it or when one node holds K.
  const auto script = [&](const std::string& flags) {
    const Outcome s = halo("plan --partitions " + p.string() + " --emit slurm --checkpoint-dir " +
                           (m_dir / "ck").string() + " " + flags);
    EXPECT_EQ(s.code, 0) << s.err;
    return s.out;
  };
  EXPECT_NE(script("--tasks-per-node 1").find("#SBATCH --nodes=1-8\n"), std::string::npos);
  EXPECT_NE(script("--tasks-per-node 2").find("#SBATCH --nodes=1-4\n"), std::string::npos);
  const std::string fixed = script("--tasks-per-node 1 --parts 4");
  EXPECT_NE(fixed.find("#SBATCH --nodes=4\n"), std::string::npos) << fixed;
  EXPECT_NE(fixed.find("#SBATCH --ntasks=4\n"), std::string::npos) << fixed;
  EXPECT_NE(script("--tasks-per-node 8").find("#SBATCH --nodes=1\n"), std::string::npos);
  // k8s: MPIJob replicas are fixed; the manifest names the rank counts the partition allows.
  const json m = plan("--partitions " + p.string() + " --emit k8s");
  EXPECT_EQ(m["metadata"]["annotations"]["halo.dev/ranks"], "1-8");

  const Outcome too_many = halo("plan --partitions " + p.string() + " --parts 9");
  EXPECT_EQ(too_many.code, 2);
  EXPECT_NE(too_many.err.find("1 to 8 ranks"), std::string::npos) << too_many.err;
}

// More than 32 parts: the menu lists the powers of two and K; any other count is planned on
// request.
TEST_F(PlanCli, RankMenuOfManyPartsListsPowersOfTwo) {
  const fs::path p = partition(40);
  const json j = plan("--partitions " + p.string());
  std::vector<int> ranks;
  for (const json& e : j["rank_menu"]) ranks.push_back(e["ranks"].get<int>());
  EXPECT_EQ(ranks, (std::vector<int>{1, 2, 4, 8, 16, 32, 40}));
  const json twenty = plan("--partitions " + p.string() + " --parts 20");
  EXPECT_EQ(twenty["ranks"], 20);
  EXPECT_EQ(twenty["per_rank"].size(), 20u);
}

TEST_F(PlanCli, KubernetesManifestMatchesTheMpiJobSchema) {
  const fs::path p = partition(2);
  const json plan_j = plan("--partitions " + p.string() + " --threads 2");
  const json m = plan("--partitions " + p.string() + " --threads 2 --emit k8s --epochs 50");
  const std::vector<std::string> errors = schema_errors(m);
  for (const std::string& e : errors) ADD_FAILURE() << e;
  EXPECT_EQ(m["spec"]["mpiImplementation"], "MPICH");
  EXPECT_EQ(m["spec"]["slotsPerWorker"], 1);
  const json& worker = m["spec"]["mpiReplicaSpecs"]["Worker"];
  EXPECT_EQ(worker["replicas"], 2);
  EXPECT_EQ(m["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"], 3);  // + the launcher
  const json& res = worker["template"]["spec"]["containers"][0]["resources"];
  EXPECT_EQ(res["requests"]["cpu"], "2");
  const std::string mem = res["requests"]["memory"];
  EXPECT_GE(std::stoll(mem.substr(0, mem.size() - 2)) << 20,
            plan_j["peak_host_bytes_per_rank"].get<std::int64_t>());
  // The launcher runs the same training command line.
  const json& cmd =
      m["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"];
  const std::string line = cmd.dump();
  for (const char* part : {"\"mpirun\"", "\"train\"", "\"--partitions\"", "\"--epochs\",\"50\""})
    EXPECT_NE(line.find(part), std::string::npos) << part << " in " << line;
  EXPECT_EQ(line.find("--emit"), std::string::npos) << line;
  // The validator catches what it should.
  json bad = m;
  bad["spec"]["mpiImplementation"] = "mpich";
  bad["spec"]["slotPerWorker"] = 1;
  EXPECT_EQ(schema_errors(bad).size(), 2u);
}

TEST_F(PlanCli, DatasetCacheAndTheSmallestFittingP) {
  // Loading Cora once builds its store; plan then reads only its header.
  Outcome r = halo("train --dataset cora --epochs 1 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  const json one = plan("--dataset cora");
  EXPECT_EQ(one["ranks"], 1);
  EXPECT_EQ(one["parts"], "whole graph");
  EXPECT_EQ(plan("--dataset cora --parts 4")["parts"], "estimated");
  // A machine whose processes cost nothing but their data, so that splitting pays on Cora.
  const fs::path cal = m_dir / "lean.json";
  std::ofstream(cal) << R"({"format": "halo-calibration", "version": 3,
    "gemm": {"alpha_s": 0, "s_per_flop": 1e-10}, "spmm": {"alpha_s": 0, "s_per_edge": 1e-9,
    "s_per_byte": 1e-10}, "elementwise": {"alpha_s": 0, "s_per_byte": 1e-10}, "sampler": {"alpha_s": 0,
    "s_per_edge": 1e-8}, "link": {"alpha_s": 1e-6, "s_per_byte": 1e-9}, "disk":
    {"s_per_byte": 1e-8}, "step": {"full_graph": [], "mini_batch": []},
    "memory": {"process_base_bytes": 0, "mpi_rank_extra_bytes": 0}})";
  const std::string lean = "--dataset cora --calibration " + cal.string();
  std::vector<std::int64_t> peak(9);
  for (int p = 1; p <= 8; ++p)
    peak[p] = plan(lean + " --parts " + std::to_string(p))["peak_host_bytes_per_rank"];
  ASSERT_LT(peak[8], peak[1]);
  // The smallest P whose peak fits, found by scanning, is what --memory-per-rank answers.
  const std::int64_t limit = (peak[1] + peak[8]) / 2;
  int expected = 1;
  while (peak[expected] > limit) ++expected;
  ASSERT_GT(expected, 1);
  const json fit = plan(lean + " --memory-per-rank " + std::to_string(limit));
  EXPECT_EQ(fit["ranks"], expected);
  EXPECT_EQ(fit["memory_per_rank_bytes"], limit);
  EXPECT_EQ(plan(lean + " --memory-per-rank 1GiB")["ranks"], 1);
  // Nothing fits in one byte.
  r = halo("plan " + lean + " --memory-per-rank 1 --max-parts 8");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--memory-per-rank"), std::string::npos) << r.err;
}

// A plain dataset directory: its store is prepared on first use in the data directory, reused
// while the files stay the same, and gives the counts the registered dataset's store gives.
TEST_F(PlanCli, ADatasetDirectoryIsPlannedFromItsStore) {
  const fs::path cora = halo::testing::datasets_dir() / "planetoid" / "cora";
  const json a = plan("--dataset " + cora.string());
  EXPECT_EQ(a["dataset"], "cora");
  EXPECT_GT(a["disk_bytes"].get<std::int64_t>(), 0);
  const fs::path stores = m_dir / "data" / "stores";
  ASSERT_TRUE(fs::is_directory(stores));
  const auto count = [&] {
    return std::distance(fs::directory_iterator(stores), fs::directory_iterator());
  };
  EXPECT_EQ(count(), 1);
  const auto built = fs::last_write_time(fs::directory_iterator(stores)->path() / "store.json");
  const json b = plan("--dataset " + cora.string());
  EXPECT_EQ(b["peak_host_bytes_per_rank"], a["peak_host_bytes_per_rank"]);
  EXPECT_EQ(count(), 1);
  EXPECT_EQ(fs::last_write_time(fs::directory_iterator(stores)->path() / "store.json"), built);
  // Not a dataset: one line naming the file.
  const Outcome r = halo("plan --dataset " + m_dir.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("edges.tsv: missing required file"), std::string::npos) << r.err;
}

// A store larger than --memory-budget, one process: plan samples the run's batches on the
// store's graph (--probe-batches), so its sampler envelopes are the run's and its rows read
// from the file per epoch and per evaluation are the run's when every batch is sampled.
TEST_F(PlanCli, ProbedBatchesGiveTheRunsEnvelopeAndRowsRead) {
  const fs::path store = m_dir / "r14", out = m_dir / "r.json";
  Outcome r = halo(
      "datasets prepare --dataset rmat --rmat-scale 14 --rmat-degree 8 "
      "--rmat-features 64 --out " +
      store.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string run_flags = " --dataset " + store.string() +
                                " --model sage --layers 2 --hidden 16 --fanouts 10,5 "
                                "--eval-fanouts 10,5 --batch-size 256 --mode mini-batch --epochs "
                                "1 --threads 1 --prefetch 0";
  const std::string flags = run_flags + " --memory-budget 4MiB";
  r = halo("train --json " + out.string() + flags);
  ASSERT_EQ(r.code, 0) << r.err;
  const json run = json::parse(halo::testing::read_file(out));
  const auto disk = run["disk_bytes_per_epoch"].get<std::int64_t>();
  const auto eval = run["evaluation_read_bytes"].get<std::int64_t>();
  const auto envelopes = run["memory"]["sampler_envelope"].get<std::int64_t>() +
                         run["memory"]["evaluation"].get<std::int64_t>();
  ASSERT_GT(disk, 0);  // the rows come from the file, most of them not cached
  ASSERT_GT(eval, 0);
  const json all = plan("--probe-batches 100000" + flags);
  EXPECT_EQ(all["per_rank"][0]["disk_read_bytes_per_epoch"].get<std::int64_t>(), disk);
  EXPECT_EQ(all["per_rank"][0]["evaluation_read_bytes"].get<std::int64_t>(), eval);
  EXPECT_EQ(all["sampler_envelope_bytes"].get<std::int64_t>(), envelopes);
  EXPECT_GT(all["probed_batches"].get<std::int64_t>(),
            all["batches_per_epoch"].get<std::int64_t>());
  // The default samples some of the evaluation's batches: close, not equal.
  const json some = plan(flags);
  EXPECT_GT(some["probed_batches"].get<std::int64_t>(), 0);
  EXPECT_LT(some["probed_batches"].get<std::int64_t>(), all["probed_batches"].get<std::int64_t>());
  EXPECT_NEAR(
      some["per_rank"][0]["evaluation_read_bytes"].get<double>() / static_cast<double>(eval), 1.0,
      0.1);
  EXPECT_EQ(some["sampler_envelope_bytes"].get<std::int64_t>(), envelopes);
  // No probe: modelled; nor for a run that holds the store in memory.
  EXPECT_EQ(plan("--probe-batches 0" + flags)["probed_batches"].get<std::int64_t>(), 0);
  EXPECT_EQ(plan(run_flags + " --memory-budget 1GiB")["probed_batches"].get<std::int64_t>(), 0);
}

TEST_F(PlanCli, CalibrateWritesWhatPlanReads) {
  const fs::path cal = m_dir / "cal.json";
  Outcome r = halo("calibrate --output " + cal.string() +
                   " --repeats 1 --rounds 2 --rmat-scale 8 --large-rmat-scale 9 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  const json c = json::parse(halo::testing::read_file(cal));
  for (const char* group :
       {"gemm", "spmm", "elementwise", "gather", "sampler", "link", "disk", "step", "memory"})
    EXPECT_TRUE(c.contains(group)) << group;
  EXPECT_GT(c["gemm"]["s_per_flop"].get<double>(), 0);
  EXPECT_GT(c["gather"]["s_per_byte"].get<double>(), 0);
  EXPECT_EQ(c["link"]["measured"], false);  // one process measures no link
  // The working-set rule's points, one per graph (scales 6, 8 and 9), in growing working set.
  for (const char* mode : {"full_graph", "mini_batch"}) {
    const json& pts = c["step"][mode];
    ASSERT_EQ(pts.size(), 3u) << mode;
    for (std::size_t i = 1; i < pts.size(); ++i) {
      EXPECT_GT(pts[i]["working_set_bytes"].get<double>(),
                pts[i - 1]["working_set_bytes"].get<double>());
    }
    EXPECT_GT(pts[0]["scale"].get<double>(), 0) << mode;
  }
  for (const json& pt : c["step"]["mini_batch"]) EXPECT_GT(pt["producer_scale"].get<double>(), 0);
  EXPECT_GE(c["step"]["batch_alpha_s"].get<double>(), 0);
  const json j = plan("--partitions " + partition(1).string() + " --calibration " + cal.string());
  EXPECT_EQ(j["calibrated"], true);
  EXPECT_GT(j["epoch_seconds"].get<double>(), 0);
  // The transport rate belongs to the link calibration: one process refuses it, before any
  // work, and leaves the file as it was.
  const std::string before = halo::testing::read_file(cal);
  r = halo("calibrate --output " + cal.string() + " --host-transport-gbps 10");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--host-transport-gbps"), std::string::npos) << r.err;
  EXPECT_EQ(halo::testing::read_file(cal), before);
}

TEST_F(PlanCli, UsageErrorsNameTheFlag) {
  const std::string p = partition(1).string();
  struct Case {
    std::string args, names;
    int code;
  };
  for (const Case& c :
       {Case{"plan --partitions " + p + " --parts 2", "--parts", 2},
        Case{"plan --dataset cora --memory-per-rank 12parsecs", "--memory-per-rank", 2},
        Case{"plan --dataset cora --memory-per-rank lots", "--memory-per-rank", 2},
        Case{"plan --partitions " + p + " --emit yaml", "--emit", 2},
        Case{"plan --dataset synthetic", "halo datasets prepare --dataset synthetic", 2},
        Case{"plan --dataset cora --calibration /no/such.json", "--calibration", 2},
        Case{"plan --fanouts 5,5", "--fanouts", 2}}) {
    const Outcome r = halo(c.args);
    EXPECT_EQ(r.code, c.code) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << c.args << ": " << r.err;
  }
}

TEST_F(PlanCli, TrainMetricsFilePassesPromtool) {
  const fs::path prom = m_dir / "halo.prom";
  const Outcome r = halo("train --dataset " + cora_dir() +
                         " --epochs 3 --threads 1 --metrics-interval 0 --metrics-port 0 "
                         "--metrics-file " +
                         prom.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string text = halo::testing::read_file(prom);
  EXPECT_NE(text.find("halo_epoch{rank=\"0\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("halo_steps_total{rank=\"0\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("halo_predicted_epoch_seconds"), std::string::npos) << text;
  EXPECT_NE(r.err.find("serving http://127.0.0.1:"), std::string::npos) << r.err;
  const Outcome check =
      halo::testing::run_command("promtool check metrics < " + prom.string(), m_dir);
  EXPECT_EQ(check.code, 0) << check.out << check.err;
}

#ifdef HALO_TEST_MPIEXEC
/// The value of metric `name` in a Prometheus text file (NaN when absent).
double metric(const std::string& text, const std::string& name) {
  const std::size_t at = text.find("\n" + name + "{");
  if (at == std::string::npos) return std::nan("");
  const std::size_t value = text.find("} ", at);
  return std::stod(text.substr(value + 2, text.find('\n', value) - value - 2));
}

// Each rank's metrics file of a 2-rank run: promtool accepts it, and the resident size never
// exceeds the peak (the kernel's high-water mark lags; it was reported above it).
TEST_F(PlanCli, TwoRankMetricsFilesHoldAPeakAtLeastTheResidentSize) {
  const fs::path p = partition(2), prom = m_dir / "m.prom";
  const Outcome r = halo::testing::run_command(
      env() + "OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 " + HALO_TEST_MPIEXEC + " -n 2 " +
          HALO_TEST_BINARY + " train --partitions " + p.string() +
          " --epochs 5 --metrics-interval 0 --metrics-file " + prom.string(),
      m_dir);
  ASSERT_EQ(r.code, 0) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    const fs::path file = m_dir / ("m-rank" + std::to_string(rank) + ".prom");
    const std::string text = halo::testing::read_file(file);
    const double resident = metric(text, "halo_host_resident_bytes");
    const double peak = metric(text, "halo_host_peak_resident_bytes");
    EXPECT_GT(resident, 0) << text;
    EXPECT_LE(resident, peak) << file;
    const Outcome check =
        halo::testing::run_command("promtool check metrics < " + file.string(), m_dir);
    EXPECT_EQ(check.code, 0) << check.out << check.err;
  }
}

// The plan's halo exchange bytes are the trainer's: every rank sends its send list's rows of
// every layer's aggregated matrix forward and their gradients back.
TEST_F(PlanCli, PredictedExchangeBytesAreTheMeasuredOnes) {
  const fs::path p = partition(2), out = m_dir / "r.json";
  for (const char* model : {"gcn", "sage"}) {
    const Outcome r = halo::testing::run_command(
        env() + "OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 " + HALO_TEST_MPIEXEC + " -n 2 " +
            HALO_TEST_BINARY + " train --partitions " + p.string() + " --epochs 2 --model " +
            model + " --json " + out.string(),
        m_dir);
    ASSERT_EQ(r.code, 0) << r.err;
    const json measured = json::parse(halo::testing::read_file(out));
    const json j = plan("--partitions " + p.string() + " --model " + model);
    std::int64_t predicted = 0;
    for (const json& rank : j["per_rank"])
      predicted += rank["comm_bytes_per_epoch"]["halo_exchange"].get<std::int64_t>();
    EXPECT_EQ(predicted, measured["exchange_bytes_per_epoch"].get<std::int64_t>()) << model;
  }
  // Dense inputs narrower than the hidden layer: the input layer aggregates first, so it
  // exchanges forward only (no backward aggregation, no dX).
  const fs::path rmat = m_dir / "rmat-p2";
  Outcome r = halo("partition --dataset rmat --rmat-scale 8 --rmat-features 8 --parts 2 --out " +
                   rmat.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = halo::testing::run_command(env() + "OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 " +
                                     HALO_TEST_MPIEXEC + " -n 2 " + HALO_TEST_BINARY +
                                     " train --partitions " + rmat.string() +
                                     " --epochs 2 --model gcn --hidden 32 --json " + out.string(),
                                 m_dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const json measured = json::parse(halo::testing::read_file(out));
  const json j = plan("--partitions " + rmat.string() + " --model gcn --hidden 32");
  std::int64_t predicted = 0;
  for (const json& rank : j["per_rank"])
    predicted += rank["comm_bytes_per_epoch"]["halo_exchange"].get<std::int64_t>();
  EXPECT_GT(predicted, 0);
  EXPECT_EQ(predicted, measured["exchange_bytes_per_epoch"].get<std::int64_t>());
}

// The plan's dense products are the ones the trainer runs: with the GEMM costed 1 ps a FLOP
// (and no other dense cost), rank 0's `dense` seconds are the FLOPs of its profiled epoch. On
// the full graph a layer transforms its owned rows only; the halo rows are exchanged after the
// transform (hidden -> classes) or before the aggregation (features -> hidden).
TEST_F(PlanCli, PredictedDenseProductsAreTheTrainersOnes) {
  const fs::path rmat = m_dir / "rmat-p2", cal = m_dir / "flop-cal.json", out = m_dir / "r.json";
  Outcome r = halo("partition --dataset rmat --rmat-scale 8 --rmat-features 8 --parts 2 --out " +
                   rmat.string());
  ASSERT_EQ(r.code, 0) << r.err;
  r = halo("calibrate --output " + cal.string() +
           " --repeats 1 --rounds 1 --rmat-scale 8 --large-rmat-scale 9 --threads 1");
  ASSERT_EQ(r.code, 0) << r.err;
  json c = json::parse(halo::testing::read_file(cal));
  c["gemm"] = {{"alpha_s", 0.0}, {"s_per_flop", 1e-12}};
  c["elementwise"] = {{"alpha_s", 0.0}, {"s_per_byte", 0.0}};  // Adam's passes
  std::ofstream(cal) << c.dump();
  for (const char* model : {"gcn", "sage"}) {
    const std::string flags =
        " --partitions " + rmat.string() + " --model " + model + " --hidden 32";
    r = halo::testing::run_command(env() + "OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 " +
                                       HALO_TEST_MPIEXEC + " -n 2 " + HALO_TEST_BINARY +
                                       " train --epochs 2 --profile --json " + out.string() + flags,
                                   m_dir);
    ASSERT_EQ(r.code, 0) << r.err;
    const json measured = json::parse(halo::testing::read_file(out));
    const double flops = measured["profile"]["kernels"]["gemm"]["flops"].get<double>();
    const json j = plan(flags + " --calibration " + cal.string());
    const double predicted = j["per_rank"][0]["seconds_per_epoch"]["dense"].get<double>() * 1e12;
    EXPECT_GT(flops, 0) << model;
    EXPECT_NEAR(predicted, flops, 1e-6 * flops) << model;
  }
}

// The plan's remote input rows of a mini-batch epoch are the ones a 2-rank run fetches, within
// 25 %, on a graph of even degrees (hop by hop from the owned seeds over the part's cut
// entries; the estimate from the halo's share of the local nodes was 2.5x on such a graph).
TEST_F(PlanCli, PredictedFeatureFetchesAreTheMeasuredOnes) {
  const fs::path syn = m_dir / "syn-p2", out = m_dir / "r.json";
  Outcome r = halo(
      "partition --dataset synthetic --synthetic-nodes 20000 --synthetic-features 8 "
      "--synthetic-degree 12 --parts 2 --out " +
      syn.string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string flags = " --partitions " + syn.string() +
                            " --model sage --mode mini-batch --batch-size 256 --fanouts 10,5";
  r = halo::testing::run_command(env() + "OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 " +
                                     HALO_TEST_MPIEXEC + " -n 2 " + HALO_TEST_BINARY +
                                     " train --epochs 1 --json " + out.string() + flags,
                                 m_dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const double measured =
      json::parse(halo::testing::read_file(out))["feature_bytes_per_epoch"].get<double>();
  const json j = plan(flags);
  double predicted = 0;
  for (const json& rank : j["per_rank"])
    predicted += rank["comm_bytes_per_epoch"]["feature_fetch"].get<double>();
  ASSERT_GT(measured, 0);
  EXPECT_NEAR(predicted / measured, 1.0, 0.25) << predicted << " vs " << measured;
}

// Under mpiexec -n 2, calibrate keeps the one-process terms, adds the link and the in-step
// message latencies fitted on 2-rank Trainer runs (at least the ping-pong's), keeps the
// transport rate it was told (which halo plan then charges unless told otherwise), and removes
// the partitions it wrote for them.
TEST_F(PlanCli, LinkCalibrationAddsTheInStepLatencies) {
  const fs::path cal = m_dir / "link-cal.json";
  const std::string flags =
      " calibrate --output " + cal.string() +
      " --repeats 1 --rounds 1 --rmat-scale 8 --large-rmat-scale 9 --threads 1";
  Outcome r = halo(flags);
  ASSERT_EQ(r.code, 0) << r.err;
  const json one = json::parse(halo::testing::read_file(cal));
  r = halo::testing::run_command(env() + "OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=0 " +
                                     HALO_TEST_MPIEXEC + " -n 2 " + HALO_TEST_BINARY + flags +
                                     " --host-transport-gbps 80",
                                 m_dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("in-step message"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("transport 10.00 GB/s at each end"), std::string::npos) << r.err;
  const json two = json::parse(halo::testing::read_file(cal));
  EXPECT_EQ(two["link"]["measured"], true);
  EXPECT_DOUBLE_EQ(two["link"]["transport_s_per_byte"].get<double>(), 1e-10);
  EXPECT_EQ(one["link"]["transport_s_per_byte"], 0.0);  // one process: none
  EXPECT_EQ(two["gemm"], one["gemm"]);
  EXPECT_EQ(two["step"], one["step"]);
  const double alpha = two["link"]["alpha_s"].get<double>();
  EXPECT_GT(alpha, 0);
  ASSERT_EQ(two["collective"].size(), 1u);  // the entry for 2 ranks
  const json& at2 = two["collective"][0];
  EXPECT_EQ(at2["ranks"], 2);
  for (const char* key : {"full_graph_message_s", "mini_batch_message_s"})
    EXPECT_GE(at2[key].get<double>(), alpha) << key;
  EXPECT_GT(at2["mini_batch_fetch_row_s"].get<double>(), 0);  // rows were fetched
  for (const auto& e : fs::directory_iterator(m_dir))
    EXPECT_EQ(e.path().filename().string().rfind(".halo-calibrate", 0), std::string::npos)
        << e.path();
  const json j = plan("--partitions " + partition(2).string() + " --calibration " + cal.string());
  EXPECT_EQ(j["calibrated"], true);
  EXPECT_GT(j["epoch_seconds"].get<double>(), 0);
  // Two ranks filling one core: the file's transport rate is charged unless overridden.
  json without = two;
  without["link"]["transport_s_per_byte"] = 0.0;
  const fs::path cal0 = m_dir / "no-transport.json";
  std::ofstream(cal0) << without.dump();
  const std::string shared = "--partitions " + partition(2).string() + " --host-cores 1";
  const double charged = plan(shared + " --calibration " + cal.string())["epoch_seconds"];
  const double none = plan(shared + " --calibration " + cal0.string())["epoch_seconds"];
  const double told = plan(shared + " --calibration " + cal0.string() +
                           " --host-transport-gbps 80")["epoch_seconds"];
  EXPECT_GT(charged, none);
  EXPECT_DOUBLE_EQ(told, charged);
}
#endif

}  // namespace
