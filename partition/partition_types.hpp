#pragma once
// Plain configuration types of the partitioner (method, objective, balance constraints) and of
// the repartitioning across snapshots.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace halo::partition {

/// How nodes are assigned to parts.
enum class Method {
  Auto,            ///< MetisKway where METIS can hold the graph, else LpMultilevel: the default
  MetisKway,       ///< METIS_PartGraphKway (multilevel k-way)
  MetisRecursive,  ///< METIS_PartGraphRecursive (multilevel recursive bisection)
  LpMultilevel,    ///< label-propagation coarsening, METIS on the coarsest graph, LP refinement
  Random,          ///< part(v) = a counter-based hash of (seed, v): the baseline
};

/// What METIS minimises.
enum class Objective {
  Cut,     ///< edges between parts
  Volume,  ///< total communication volume (k-way only)
};

/// The vertex-weight constraints METIS balances (any non-empty subset). Each becomes one
/// weight per node: 1 (nodes), 1 for training nodes else 0 (train), the node's number of stored
/// edges, i.e. its row length in the input graph (edges).
struct Balance {
  bool nodes = true;
  bool train = true;
  bool edges = true;
};

struct PartitionConfig {
  /// P, in [1, 1024].
  std::int32_t num_parts = 2;
  Method method = Method::Auto;
  Objective objective = Objective::Cut;
  Balance balance;
  /// Allowed imbalance per constraint: max part weight <= (1 + imbalance) * total / P. METIS's
  /// ubvec (its ufactor / 1000); in (0, 1].
  double imbalance = 0.03;
  /// METIS_OPTION_SEED, and the seed of the random partitioner.
  std::uint64_t seed = 0;
  /// Bytes the LP multilevel partitioner may hold in coarse graphs (0: no bound): a larger
  /// coarse level goes to scratch files in scratch_dir, mapped. Never changes the result.
  std::size_t memory_budget = 0;
  /// Where those files go ("": the system's temporary directory).
  std::string scratch_dir;
};

/// How snapshot t's assignment is derived from snapshot t-1's. Snapshot 0 (or any snapshot
/// without a previous assignment) is METIS from scratch under every method.
enum class RepartitionMethod {
  Scratch,    ///< METIS k-way on the snapshot, parts relabelled by maximum overlap
  Streaming,  ///< old nodes stay; new nodes placed one by one by LDG (repartition_every aside)
  Migration,  ///< Scotch's SCOTCH_graphRepart from the previous assignment
};

/// "scratch", "streaming", "migration".
std::string_view to_string(RepartitionMethod m);
/// Inverse of to_string; halo::LogicError naming the accepted values.
RepartitionMethod parse_repartition_method(std::string_view s);

/// The default of RepartitionConfig::migration_weight (see bench/results/migration.md).
constexpr double kDefaultMigrationWeight = 4.0;

struct RepartitionConfig {
  /// P, in [1, 1024].
  std::int32_t num_parts = 2;
  RepartitionMethod method = RepartitionMethod::Scratch;
  /// What the METIS calls minimise.
  Objective objective = Objective::Cut;
  /// Every method balances node counts: max part <= (1 + imbalance) * nodes / P, in (0, 1].
  double imbalance = 0.03;
  /// Seed of METIS and Scotch.
  std::uint64_t seed = 0;
  /// Migration: the cost of moving one node, in cut edges (Scotch's emraval): Scotch
  /// minimises cut + migration_weight * (nodes moved). ParMETIS's itr (cut cost over
  /// redistribution cost) is its inverse: itr = 1 / migration_weight. 0 ignores migration
  /// (repartition from scratch with Scotch); > 0 and finite.
  double migration_weight = kDefaultMigrationWeight;
  /// Streaming: repartition from scratch (relabelled) every this many snapshots; 0: only
  /// snapshot 0.
  std::int64_t repartition_every = 0;
};

/// "auto", "metis", "metis-rb", "lp-multilevel", "random".
std::string_view to_string(Method m);
/// "cut", "vol".
std::string_view to_string(Objective o);
/// "nodes,train,edges" (the chosen constraints, in that order).
std::string to_string(const Balance& b);

/// Inverse of to_string; throws halo::LogicError naming the accepted values.
Method parse_method(std::string_view s);
Objective parse_objective(std::string_view s);
/// A comma-separated non-empty subset of {nodes, train, edges}, each at most once.
Balance parse_balance(std::string_view s);

}  // namespace halo::partition
