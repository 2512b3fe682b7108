// The configuration of a run: its checks, the batch-count rule and the checkpoint identity.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <halo/kernels/error.hpp>
#include <halo/runtime/config.hpp>

namespace halo::runtime {

namespace {

bool finite_positive(double x) { return std::isfinite(x) && x > 0; }

}  // namespace

std::string exact_number(double v) {
  char s[40];
  std::snprintf(s, sizeof s, "%.17g", v);
  return s;
}

std::int64_t epoch_batches(const MiniBatchConfig& mb, std::int64_t seeds) {
  const std::int64_t all = (seeds + mb.batch_size - 1) / mb.batch_size;
  return mb.max_batches > 0 ? std::min(all, mb.max_batches) : all;
}

std::string to_string(CachePolicy p) { return p == CachePolicy::Degree ? "degree" : "access"; }

CachePolicy parse_cache_policy(const std::string& s) {
  if (s == "degree") return CachePolicy::Degree;
  if (s == "access") return CachePolicy::Access;
  HALO_FAIL("cache policy '" + s + "': expected degree or access");
}

void check_config(const TrainConfig& c) {
  HALO_EXPECTS(c.epochs >= 1, "train: epochs must be >= 1, got " + std::to_string(c.epochs));
  HALO_EXPECTS(finite_positive(c.lr), "train: the learning rate must be a finite number > 0");
  HALO_EXPECTS(std::isfinite(c.weight_decay) && c.weight_decay >= 0,
               "train: the weight decay must be a finite number >= 0");
  HALO_EXPECTS(c.checkpoint.every >= 0 && c.checkpoint.keep >= 1,
               "train: checkpoint every must be >= 0 and keep >= 1");
  if (!c.mini_batch) return;
  const MiniBatchConfig& mb = *c.mini_batch;
  HALO_EXPECTS(mb.batch_size >= 1, "train: the batch size must be >= 1");
  // (Each task checks the fan-outs against its model's layers.)
  for (const int k : mb.fanouts) HALO_EXPECTS(k >= -1, "train: fan-outs must be -1 or >= 0");
  for (const int k : mb.eval_fanouts)
    HALO_EXPECTS(k >= -1, "train: evaluation fan-outs must be -1 or >= 0");
  HALO_EXPECTS(mb.max_batches >= 0, "train: max_batches must be >= 0 (0: every batch)");
  HALO_EXPECTS(std::isfinite(mb.envelope_margin) && mb.envelope_margin >= 0,
               "train: the envelope margin must be a finite number >= 0");
  HALO_EXPECTS(mb.prefetch == kAutoPrefetch || (mb.prefetch >= 0 && mb.prefetch <= 16),
               "train: prefetch must be in [0, 16] or auto");
  HALO_EXPECTS(std::isfinite(mb.cache_mb) && mb.cache_mb >= 0,
               "train: the cache size must be a finite number >= 0");
  HALO_EXPECTS(c.overlap, "train: overlap applies to full-graph training");
}

CheckpointIdentity config_identity(const TrainConfig& c, const std::string& data, int ranks,
                                   const CheckpointIdentity& model) {
  CheckpointIdentity id = {{"data", data}};
  if (ranks > 0) id.emplace_back("world_size", std::to_string(ranks));
  id.insert(id.end(), model.begin(), model.end());
  id.insert(id.end(), {{"lr", exact_number(c.lr)},
                       {"weight_decay", exact_number(c.weight_decay)},
                       {"seed", std::to_string(c.seed)},
                       {"normalize_features", c.normalize_features ? "true" : "false"},
                       {"overlap", c.overlap ? "true" : "false"},
                       {"mode", c.mini_batch ? "mini-batch" : "full-graph"}});
  if (c.mini_batch) {
    const MiniBatchConfig& mb = *c.mini_batch;
    // Appended piece by piece (GCC 12's -Wrestrict false positive on "literal" + string).
    std::string fanouts;
    for (const int f : mb.fanouts)
      fanouts.append(fanouts.empty() ? "" : ",").append(std::to_string(f));
    // Per relation and layer (the heterogeneous task): layers separated by ':'.
    for (const auto& layer : mb.relation_fanouts) {
      fanouts.append(fanouts.empty() ? "" : ":");
      for (std::size_t r = 0; r < layer.size(); ++r)
        fanouts.append(r == 0 ? "" : ",").append(std::to_string(layer[r]));
    }
    id.insert(id.end(),
              {{"batch_size", std::to_string(mb.batch_size)},
               {"fanouts", fanouts},
               {"replace", mb.replace ? "true" : "false"},
               {"prefetch", mb.prefetch == kAutoPrefetch ? "auto" : std::to_string(mb.prefetch)},
               {"cache_mb", exact_number(mb.cache_mb)},
               {"cache_policy", to_string(mb.cache_policy)}});
    // Only when set: checkpoints of runs over every batch keep their identity.
    if (mb.max_batches > 0) id.emplace_back("max_batches", std::to_string(mb.max_batches));
    if (!mb.eval_fanouts.empty()) {
      std::string eval;
      for (const int f : mb.eval_fanouts)
        eval.append(eval.empty() ? "" : ",").append(std::to_string(f));
      id.emplace_back("eval_fanouts", eval);
    }
  }
  return id;
}

}  // namespace halo::runtime
