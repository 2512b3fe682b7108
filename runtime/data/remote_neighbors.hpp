#pragma once
// The neighbour source of a partitioned graph: every destination's row is sampled by the rank
// that owns it.

#include <cstdint>
#include <span>
#include <vector>

#include <halo/partition/formats/partition_format.hpp>
#include <halo/runtime/comm/comm.hpp>
#include <halo/sampler/neighbor_source.hpp>

namespace halo::runtime {

/// A sampler::NeighborSource over the ranks of `comm`, rank r holding part r. Ids are partition
/// ids. count(dst) groups the destinations by owner and sends them there (all-to-all); each
/// owner counts the draws of its rows and sends the counts back. fill() has the owners draw
/// from their rows of the training graph (stored in ascending original id) keyed by the node's
/// original id, exactly as one process draws, and send the neighbours back as partition ids,
/// which it places. Collective: every rank calls count and fill for the same hop, with however
/// many destinations it has (possibly none). Buffers are sized by reserve() for the sampler's
/// envelope, so a hop allocates nothing. Keeps references to `part` and `comm`.
class RemoteNeighbors final : public sampler::NeighborSource {
 public:
  RemoteNeighbors(const partition::Part& part, Comm& comm);
  /// One relation of a heterogeneous partition, ids type-local original ids: `rows` this
  /// rank's owned destination rows (row i listing its sources' ids in ascending order, keyed
  /// by the row's id; borrowed), `owner[v]` and `row[v]` the rank owning destination v and its
  /// row there (borrowed, every rank the same), `stats` the whole relation's. The draws are
  /// sent back as they are stored (ids of the source type).
  RemoteNeighbors(sampler::LocalNeighbors rows, std::span<const std::int32_t> owner,
                  std::span<const kernels::NodeId> row, sampler::DegreeStats stats, Comm& comm);
  /// The whole training graph's nodes, entries and largest row (the part stores them).
  sampler::DegreeStats stats() const override;
  /// Sizes the buffers for hops within `envelope` (on every rank the same bounds).
  void reserve(const sampler::SamplerEnvelope& envelope, const std::vector<int>& fanouts,
               bool replace);
  void count(const kernels::Resources& res, kernels::Span<const kernels::NodeId> dst, int fanout,
             bool replace, std::int64_t* counts) override;
  void fill(const kernels::Resources& res, kernels::Span<const kernels::NodeId> dst, int fanout,
            bool replace, std::uint64_t hop_key, const std::int64_t* offsets,
            kernels::NodeId* out) override;

  /// Bytes this rank sent to other ranks (requests and replies) since the last reset.
  std::int64_t bytes_sent() const { return m_bytes; }
  void reset_bytes() { m_bytes = 0; }

 private:
  std::int32_t owner(kernels::NodeId v) const {
    return m_part ? m_part->ids.owner(v) : m_owner[static_cast<std::size_t>(v)];
  }
  /// The row of owned destination v on this rank.
  std::int64_t local_row(kernels::NodeId v) const;

  const partition::Part* m_part = nullptr;  // null: a heterogeneous relation (m_owner, m_row)
  std::span<const std::int32_t> m_owner;
  std::span<const kernels::NodeId> m_row;
  sampler::DegreeStats m_stats;
  Comm& m_comm;
  sampler::LocalNeighbors m_rows;  // the owned rows, keyed by original id
  std::int64_t m_bytes = 0;
  // Per hop: destinations grouped by owner (m_slot: dst i's position in m_ask), the requests
  // received and their rows, the counts each way, the draws served and those received.
  std::vector<std::int64_t> m_slot;
  std::vector<kernels::NodeId> m_ask, m_asked, m_local;
  std::vector<std::int64_t> m_count_out, m_count_in, m_cursor;
  std::vector<std::size_t> m_bytes_out, m_bytes_in;
  std::vector<std::int64_t> m_served_offsets;  // draws of each request served (scanned)
  std::vector<std::int64_t> m_got_counts;      // draws of each request asked (ask order)
  std::vector<std::int64_t> m_got_offsets;     // where they start in m_got
  std::vector<kernels::NodeId> m_served, m_got;
};

}  // namespace halo::runtime
