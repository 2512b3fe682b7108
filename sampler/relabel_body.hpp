#pragma once
// Single-source bodies of unique + relabel: an open-addressing hash table maps each global id
// to the position of its first occurrence (destinations first, then sampled edges in order).

#include <cstdint>

#include <halo/kernels/hd.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/kernels/types.hpp>
#include <halo/kernels/views.hpp>

namespace halo::sampler::detail {

using kernels::NodeId;

using kernels::atomic_cas;
using kernels::atomic_load;

/// Linear-probing table of (id << 32 | position) words; kEmpty marks a free slot (ids are below
/// 2^31, so no entry equals it). Keeping the smallest position per id makes the result
/// independent of the order in which threads insert. Slots must outnumber the distinct ids
/// (the envelope keeps the load below 1/2), or insert never finds a free slot.
struct HashTable {
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  std::uint64_t* slots;
  std::uint64_t mask;  // number of slots - 1 (a power of two)

  HALO_HD std::uint64_t home(NodeId id) const {
    return kernels::rng::mix(static_cast<std::uint64_t>(id)) & mask;
  }
  /// Records that `id` occurs at `position`, keeping its smallest position. Thread-safe.
  HALO_HD void insert_min(NodeId id, std::uint32_t position) const {
    const std::uint64_t entry = static_cast<std::uint64_t>(id) << 32 | position;
    for (std::uint64_t s = home(id);; s = (s + 1) & mask) {
      std::uint64_t cur = atomic_load(slots + s);
      while (cur == kEmpty || cur >> 32 == static_cast<std::uint64_t>(id)) {
        if (cur <= entry && cur != kEmpty) return;
        if (atomic_cas(slots + s, cur, entry)) return;
        cur = atomic_load(slots + s);
      }
    }
  }
  /// The slot holding `id`, which must be present. Only once every insert has finished.
  HALO_HD std::int64_t find_slot(NodeId id) const {
    std::uint64_t s = home(id);
    while (slots[s] >> 32 != static_cast<std::uint64_t>(id)) s = (s + 1) & mask;
    return static_cast<std::int64_t>(s);
  }
  /// Starts fetching the home slot of `id` (host code: random slots of a large table are
  /// latency-bound, so the loops over positions ask kProbeAhead indices ahead).
  void prefetch(NodeId id) const { __builtin_prefetch(slots + home(id), 1); }
  /// The smallest position of `id`, which must be present.
  HALO_HD std::int64_t position(NodeId id) const {
    return static_cast<std::int64_t>(slots[find_slot(id)] & 0xFFFFFFFFu);
  }
};

/// How many indices ahead the host loops over a table prefetch their slot.
constexpr std::int64_t kProbeAhead = 8;

/// Index i < |dst|: destination i at position i; else sampled edge e = i - |dst| at i.
/// (`sizes` in this file: see CountBody in sample_body.hpp; there |dst| = sizes[0].)
struct InsertBody {
  HashTable table;
  kernels::Span<const NodeId> dst;
  const NodeId* sampled;
  const std::int64_t* sizes = nullptr;
  std::int64_t count = 0;  // the positions, where known (CPU): later slots are prefetched
  HALO_HD void operator()(std::int64_t i) const {
    std::int64_t num_dst = dst.size;
    if (sizes != nullptr) {
      num_dst = sizes[0];
      if (i >= num_dst + sizes[1]) return;
    }
#if !defined(__CUDA_ARCH__)
    if (const std::int64_t a = i + kProbeAhead; a < count)
      table.prefetch(a < num_dst ? dst[a] : sampled[a - num_dst]);
#endif
    const NodeId id = i < num_dst ? dst[i] : sampled[i - num_dst];
    table.insert_min(id, static_cast<std::uint32_t>(i));
  }
};

/// flags[e] = 1 when sampled edge e is the first occurrence of an id that is no destination.
/// Other edges swap their id for its first position (the relabelling needs nothing else of
/// them, and it saves a second lookup); first occurrences keep the id for src_ids.
struct FirstOccurrenceBody {
  HashTable table;
  std::int64_t num_dst;  // ignored when `sizes` is set
  NodeId* sampled;
  std::int64_t* flags;
  const std::int64_t* sizes = nullptr;
  std::int64_t count = 0;  // the edges, where known (CPU): later slots are prefetched
  HALO_HD void operator()(std::int64_t e) const {
    if (sizes != nullptr && e >= sizes[1]) {
      flags[e] = 0;
      return;
    }
#if !defined(__CUDA_ARCH__)
    if (e + kProbeAhead < count) table.prefetch(sampled[e + kProbeAhead]);
#endif
    const std::int64_t own = (sizes != nullptr ? sizes[0] : num_dst) + e;  // this edge's position
    const std::int64_t pos = table.position(sampled[e]);
    flags[e] = pos == own ? 1 : 0;
    if (pos != own) sampled[e] = static_cast<NodeId>(pos);
  }
};

/// With prefix[e] = the number of first occurrences before edge e (prefix[e + 1] - prefix[e]
/// is edge e's flag): src_ids = destinations, then the new sources in first-occurrence order;
/// sampled[e] becomes its source's local id. In place: index i touches only its own edge.
struct RelabelBody {
  kernels::Span<const NodeId> dst;
  NodeId* sampled;
  const std::int64_t* prefix;
  NodeId* src_ids;
  const std::int64_t* sizes = nullptr;
  HALO_HD void operator()(std::int64_t i) const {
    std::int64_t num_dst = dst.size;
    if (sizes != nullptr) {
      num_dst = sizes[0];
      if (i >= num_dst + sizes[1]) return;
    }
    if (i < num_dst) {
      src_ids[i] = dst[i];
      return;
    }
    const std::int64_t e = i - num_dst;
    if (prefix[e + 1] != prefix[e]) {
      const std::int64_t local = num_dst + prefix[e];
      src_ids[local] = sampled[e];
      sampled[e] = static_cast<NodeId>(local);
      return;
    }
    const std::int64_t pos = sampled[e];
    sampled[e] = static_cast<NodeId>(pos < num_dst ? pos : num_dst + prefix[pos - num_dst]);
  }
};

/// slot[s] = the table slot of source s. Clearing goes in a second pass: a slot emptied while
/// another thread still probes past it would cut that thread's probe chain.
struct FindSlotBody {
  HashTable table;
  const NodeId* src_ids;
  std::int64_t* slot;
  const std::int64_t* sizes = nullptr;
  HALO_HD void operator()(std::int64_t s) const {
    if (sizes != nullptr && s >= sizes[2]) return;
    slot[s] = table.find_slot(src_ids[s]);
  }
};

struct ClearSlotBody {
  HashTable table;
  const std::int64_t* slot;
  const std::int64_t* sizes = nullptr;
  HALO_HD void operator()(std::int64_t s) const {
    if (sizes != nullptr && s >= sizes[2]) return;
    table.slots[slot[s]] = HashTable::kEmpty;
  }
};

}  // namespace halo::sampler::detail
