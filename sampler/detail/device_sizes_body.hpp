#pragma once
// Single-source bodies that only the GPU pipeline launches: seed validation on the device and
// the small steps that keep each hop's sizes in device memory (the host reads them once a batch).

#include <cstdint>

#include <halo/kernels/hd.hpp>
#include <halo/kernels/types.hpp>
#include <halo/sampler/relabel_body.hpp>

namespace halo::sampler::detail {

using kernels::NodeId;

/// The device words of one batch: per layer l, words 3l .. 3l+2 hold {num_dst, num_edges,
/// num_src} (the `sizes` of the hop bodies); then the status words below. The host reads
/// words [0, readback(L)) back once per batch.
struct DeviceWords {
  static constexpr std::int64_t kErrorKind = 0;    // 0: none, 1: out of range, 2: repeated
  static constexpr std::int64_t kErrorSeed = 1;    // the offending seed's id
  static constexpr std::int64_t kFirstBad = 2;     // smallest index of an out-of-range seed
  static constexpr std::int64_t kFirstRepeat = 3;  // smallest index of a repeated seed
  static constexpr std::int64_t kStatusWords = 4;
  static constexpr std::int64_t kNone = INT64_MAX;  // "no such index" for the two minima

  static constexpr std::int64_t total(std::int64_t num_layers) {
    return 3 * num_layers + kStatusWords;
  }
  /// Sizes of every layer, the error kind and the offending seed: what the host reads back.
  static constexpr std::int64_t readback(std::int64_t num_layers) {
    return 3 * num_layers + kErrorSeed + 1;
  }
};

using kernels::atomic_min;

/// Seed i: an id outside [0, num_nodes) lowers status[kFirstBad] to i; an id inside goes into
/// the table at position i (the hop's InsertBody inserts it again, which changes nothing).
/// Out-of-range ids never reach the table or the graph.
struct SeedInsertBody {
  HashTable table;
  const NodeId* seeds;
  std::int64_t num_nodes;
  std::int64_t* status;
  HALO_HD void operator()(std::int64_t i) const {
    const NodeId v = seeds[i];
    if (v < 0 || v >= num_nodes) {
      atomic_min(status + DeviceWords::kFirstBad, i);
      return;
    }
    table.insert_min(v, static_cast<std::uint32_t>(i));
  }
};

/// Seed i repeats an earlier seed when its id's first position is not i (the CPU path's test):
/// lowers status[kFirstRepeat] to i. After SeedInsertBody has finished.
struct SeedDistinctBody {
  HashTable table;
  const NodeId* seeds;
  std::int64_t num_nodes;
  std::int64_t* status;
  HALO_HD void operator()(std::int64_t i) const {
    const NodeId v = seeds[i];
    if (v < 0 || v >= num_nodes) return;
    if (table.position(v) != i) atomic_min(status + DeviceWords::kFirstRepeat, i);
  }
};

/// One thread, after the two seed bodies: turns the minima into the error kind and seed (an
/// out-of-range seed first, like the CPU path), resets them for the next batch, and sets the
/// seeds' hop's num_dst: the seed count, or 0 on an error, so that every later body of the
/// batch does nothing (a repeated seed could otherwise exceed the envelope's edge bound).
struct SeedGateBody {
  const NodeId* seeds;
  std::int64_t num_seeds;
  std::int64_t* status;
  std::int64_t* num_dst;
  HALO_HD void operator()(std::int64_t) const {
    std::int64_t kind = 0, seed = 0;
    if (status[DeviceWords::kFirstBad] != DeviceWords::kNone) {
      kind = 1;
      seed = seeds[status[DeviceWords::kFirstBad]];
    } else if (status[DeviceWords::kFirstRepeat] != DeviceWords::kNone) {
      kind = 2;
      seed = seeds[status[DeviceWords::kFirstRepeat]];
    }
    status[DeviceWords::kErrorKind] = kind;
    status[DeviceWords::kErrorSeed] = seed;
    status[DeviceWords::kFirstBad] = DeviceWords::kNone;
    status[DeviceWords::kFirstRepeat] = DeviceWords::kNone;
    *num_dst = kind == 0 ? num_seeds : 0;
  }
};

/// One thread, after the scan of the counts: num_edges = indptr[num_dst], and prefix[0] = 0
/// for the first-occurrence scan (the previous hop's FindSlotBody wrote table slots there).
struct EdgeTotalBody {
  const std::int64_t* indptr;
  std::int64_t* sizes;
  std::int64_t* prefix;
  HALO_HD void operator()(std::int64_t) const {
    sizes[1] = indptr[sizes[0]];
    prefix[0] = 0;
  }
};

/// One thread, after the scan of the first-occurrence flags: num_src = num_dst + the number of
/// new sources, which is also the next hop's num_dst (`next_num_dst`, null for the last hop).
struct SourceTotalBody {
  const std::int64_t* prefix;
  std::int64_t* sizes;
  std::int64_t* next_num_dst;
  HALO_HD void operator()(std::int64_t) const {
    const std::int64_t num_src = sizes[0] + prefix[sizes[1]];
    sizes[2] = num_src;
    if (next_num_dst != nullptr) *next_num_dst = num_src;
  }
};

}  // namespace halo::sampler::detail
