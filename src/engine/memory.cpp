// The memory planner (tinygrad's engine/memory.py): intermediate buffers whose lifetimes don't overlap share bytes of one
// arena per device. Lifetimes are intervals of item indices; placement is greedy, largest buffer first, at the lowest
// offset free of every buffer that lives at the same time.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "engine/realize.h"

namespace tg {

MemoryPlan plan_memory(std::vector<ExecItem>& items, const std::function<bool(const Buffer*)>& movable) {
  struct Life {
    Buffer* buf;
    size_t first, last, bytes, offset = 0;
  };
  std::unordered_map<const Buffer*, size_t> index;
  std::vector<Life> lives;
  std::unordered_map<const Buffer*, bool> rejected;
  for (size_t i = 0; i < items.size(); i++)
    for (size_t j = 0; j < items[i].bufs.size(); j++) {
      Buffer* b = items[i].bufs[j].get();
      if (auto it = index.find(b); it != index.end()) {
        lives[it->second].last = i;
        continue;
      }
      auto [r, fresh] = rejected.try_emplace(b, false);
      if (!fresh && r->second) continue;
      // a buffer first read here holds data from before the items: it can't share
      if (j != 0 || b->base() || !movable(b)) {
        r->second = true;
        continue;
      }
      index[b] = lives.size();
      size_t align = get_device(b->device()).allocator().view_alignment();
      lives.push_back({b, i, i, (std::max<size_t>(b->nbytes(), 1) + align - 1) / align * align});
    }
  MemoryPlan plan;
  std::map<std::string, std::vector<Life*>> by_device;
  for (auto& l : lives) by_device[l.buf->device()].push_back(&l), plan.buffers++, plan.total_bytes += l.bytes;
  std::unordered_map<const Buffer*, std::shared_ptr<Buffer>> view;
  for (auto& [device, ls] : by_device) {
    std::sort(ls.begin(), ls.end(), [](const Life* a, const Life* b) { return a->bytes != b->bytes ? a->bytes > b->bytes : a->first < b->first; });
    std::vector<Life*> placed;
    size_t arena = 0;
    for (Life* l : ls) {
      std::vector<std::pair<size_t, size_t>> busy;  // byte ranges taken by buffers alive at the same time
      for (Life* p : placed)
        if (p->first <= l->last && l->first <= p->last) busy.emplace_back(p->offset, p->offset + p->bytes);
      std::sort(busy.begin(), busy.end());
      size_t at = 0;
      for (auto [b, e] : busy) {
        if (at + l->bytes <= b) break;
        at = std::max(at, e);
      }
      l->offset = at, arena = std::max(arena, at + l->bytes);
      placed.push_back(l);
    }
    plan.peak_bytes += arena;
    auto base = std::make_shared<Buffer>(device, dtypes::uint8, int64_t(arena));
    for (Life* l : ls) view[l->buf] = std::make_shared<Buffer>(base, l->offset, l->buf->dtype(), l->buf->size());
  }
  for (auto& e : items)
    for (auto& b : e.bufs)
      if (auto it = view.find(b.get()); it != view.end()) b = it->second;
  return plan;
}

}  // namespace tg
