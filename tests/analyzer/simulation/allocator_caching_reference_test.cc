// The caching-allocator model (size buckets of address heaps with stale entries, the free-block
// index of analyzer/simulation/caching_allocator.h) against a direct transcription of PyTorch's
// rules that keeps every block in a list and scans it: best fit is the least (size, segment,
// offset) of the pool's free blocks at least as large as the request. Long random request sequences
// with many blocks of equal size (the heaps' tie on address) must leave both with the same
// allocated and reserved bytes and segment count after every request, with and without a capacity.

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <tuple>
#include <vector>

#include "analyzer/simulation/caching_allocator.h"

namespace memplan {
namespace {

constexpr int64_t kMiB = 1 << 20;

class ReferenceCaching {
 public:
  explicit ReferenceCaching(std::optional<int64_t> capacity) : capacity_(capacity) {}

  bool Allocate(int64_t handle, int64_t bytes) {
    const int64_t size = bytes < 512 ? 512 : (bytes + 511) / 512 * 512;
    const bool small = size <= kMiB;
    std::optional<std::tuple<int64_t, int64_t, size_t, size_t>> best;  // size, seg, offset; index
    for (size_t s = 0; s < segments_.size(); ++s) {
      if (segments_[s].released || segments_[s].small != small) continue;
      for (size_t i = 0; i < segments_[s].blocks.size(); ++i) {
        const Block& b = segments_[s].blocks[i];
        if (!b.free || b.size < size) continue;
        auto key =
            std::make_tuple(b.size, static_cast<int64_t>(s), static_cast<size_t>(b.offset), i);
        if (!best || key < *best) best = key;
      }
    }
    size_t seg = 0;
    size_t index = 0;
    if (best) {
      seg = static_cast<size_t>(std::get<1>(*best));
      index = std::get<3>(*best);
    } else {
      const int64_t segment_size = small ? 2 * kMiB
                                   : size < 10 * kMiB
                                       ? 20 * kMiB
                                       : (size + 2 * kMiB - 1) / (2 * kMiB) * 2 * kMiB;
      if (capacity_ && reserved_ + segment_size > *capacity_) {
        for (Segment& s : segments_) {
          if (s.released || s.blocks.size() != 1 || !s.blocks[0].free) continue;
          s.released = true;
          reserved_ -= s.size;
        }
        if (reserved_ + segment_size > *capacity_) return false;
      }
      segments_.push_back(Segment{segment_size, small, false, {Block{0, segment_size, true}}});
      reserved_ += segment_size;
      seg = segments_.size() - 1;
    }
    std::vector<Block>& blocks = segments_[seg].blocks;
    const int64_t remaining = blocks[index].size - size;
    if (small ? remaining >= 512 : remaining > kMiB) {
      blocks.insert(blocks.begin() + static_cast<long>(index) + 1,
                    Block{blocks[index].offset + size, remaining, true});
      blocks[index].size = size;
    }
    blocks[index].free = false;
    allocated_ += blocks[index].size;
    where_[handle] = {seg, blocks[index].offset};
    return true;
  }

  void Free(int64_t handle) {
    const auto [seg, offset] = where_.at(handle);
    where_.erase(handle);
    std::vector<Block>& blocks = segments_[seg].blocks;
    size_t i = 0;
    while (blocks[i].offset != offset) ++i;
    allocated_ -= blocks[i].size;
    blocks[i].free = true;
    if (i + 1 < blocks.size() && blocks[i + 1].free) {
      blocks[i].size += blocks[i + 1].size;
      blocks.erase(blocks.begin() + static_cast<long>(i) + 1);
    }
    if (i > 0 && blocks[i - 1].free) {
      blocks[i - 1].size += blocks[i].size;
      blocks.erase(blocks.begin() + static_cast<long>(i));
    }
  }

  int64_t allocated_bytes() const { return allocated_; }
  int64_t reserved_bytes() const { return reserved_; }
  int64_t num_segments() const {
    int64_t n = 0;
    for (const Segment& s : segments_) n += s.released ? 0 : 1;
    return n;
  }

 private:
  struct Block {
    int64_t offset = 0;
    int64_t size = 0;
    bool free = true;
  };
  struct Segment {
    int64_t size = 0;
    bool small = false;
    bool released = false;
    std::vector<Block> blocks;  // in address order
  };
  std::optional<int64_t> capacity_;
  std::vector<Segment> segments_;
  std::map<int64_t, std::pair<size_t, int64_t>> where_;  // handle -> (segment, offset)
  int64_t allocated_ = 0;
  int64_t reserved_ = 0;
};

// Returns how many requests the capacity refused.
int Replay(std::optional<int64_t> capacity, uint32_t seed) {
  CachingAllocatorOptions options;
  options.capacity = capacity;
  CachingAllocator model(options);
  ReferenceCaching reference(capacity);
  // Few distinct sizes, so many free blocks share one (and one address order decides).
  const std::vector<int64_t> sizes = {100,          512,      300 * 1024, 700 * 1024, kMiB,
                                      3 * kMiB / 2, 3 * kMiB, 5 * kMiB,   12 * kMiB};
  std::mt19937 random(seed);
  std::vector<int64_t> live;
  int64_t next_handle = 0;
  int refused = 0;
  for (int op = 0; op < 10000; ++op) {
    INFO("seed " << seed << ", request " << op);
    if (!live.empty() && random() % 2 == 0) {
      const size_t pick = random() % live.size();
      model.Free(live[pick]);
      reference.Free(live[pick]);
      live[pick] = live.back();
      live.pop_back();
    } else {
      const int64_t bytes = sizes[random() % sizes.size()];
      const bool fits = model.Allocate(next_handle, bytes);
      REQUIRE(fits == reference.Allocate(next_handle, bytes));
      if (fits) live.push_back(next_handle);
      refused += fits ? 0 : 1;
      ++next_handle;
    }
    REQUIRE(model.allocated_bytes() == reference.allocated_bytes());
    REQUIRE(model.reserved_bytes() == reference.reserved_bytes());
    REQUIRE(model.num_segments() == reference.num_segments());
  }
  return refused;
}

TEST_CASE("caching: random requests match the list-scanning transcription", "[allocator]") {
  for (uint32_t seed : {1u, 2u, 3u}) CHECK(Replay(std::nullopt, seed) == 0);
}

TEST_CASE("caching: random requests under a capacity match the transcription", "[allocator]") {
  // 200 MiB: the live set (a random walk of up to 12 MiB blocks) runs into it, so
  // segments are released and requests refused.
  for (uint32_t seed : {4u, 5u}) CHECK(Replay(200 * kMiB, seed) > 0);
}

}  // namespace
}  // namespace memplan
