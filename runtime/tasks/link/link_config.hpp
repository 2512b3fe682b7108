#pragma once
// The link-prediction task's configuration (runtime::TrainConfig::link; docs/dynamic.md).

#include <cstdint>
#include <string>

#include <halo/nn/evolvegcn.hpp>

namespace halo::runtime {

/// The validation metric that selects the epoch a run keeps.
enum class LinkSelect {
  Map,  ///< the mean average precision over every pair (EvolveGCN's UC Irvine target_measure)
  Mrr,  ///< the mean reciprocal rank
};

/// "map" or "mrr"; halo::LogicError for another name.
LinkSelect parse_link_select(const std::string& name);
std::string to_string(LinkSelect s);

/// How the link-prediction task is set up (docs/dynamic.md).
struct LinkPredictionConfig {
  /// The encoder: kind and embedding width (in_features is taken from the data).
  nn::TemporalModelConfig model;
  /// Width of the pair scorer's hidden layer.
  std::int64_t scorer_hidden = 100;
  /// Snapshots the encoder reads before a predicted step (truncated backpropagation through
  /// time over this window).
  int window = 10;
  /// Shares of the T steps (snapshots): the first round(train T) are training steps, the next
  /// round(val T) validation steps, the rest test steps (EvolveGCN: 88 -> 62 / 9 / 17). A step
  /// t is predicted from snapshots t - window .. t - 1; training predicts steps window ..
  /// train - 1.
  double train_fraction = 0.7;
  double val_fraction = 0.1;
  /// Negative pairs sampled per positive pair of a training step (EvolveGCN's UC Irvine
  /// negative_mult_training).
  int negatives = 50;
  /// Class weights of the loss (EvolveGCN weights its two classes).
  double positive_weight = 0.9;
  double negative_weight = 0.1;
  /// What selects the epoch kept: its validation MAP or MRR, computed after every epoch.
  LinkSelect select_by = LinkSelect::Map;
};

}  // namespace halo::runtime
