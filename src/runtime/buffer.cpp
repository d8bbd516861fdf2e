#include <cstdlib>
#include <cstring>
#include <vector>

#include "helpers.h"
#include "runtime/device.h"
#include "uop/viz.h"

namespace tg {

void* Allocator::alloc(size_t nbytes) {
  size_t blk = block_size(nbytes);
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = cache_.find(blk);
    if (it != cache_.end() && !it->second.empty()) {
      auto e = it->second.back();  // the most recently freed: the likeliest to be in cache
      it->second.pop_back();
      void* p = e->p;
      lru_.erase(e);
      cached_ -= blk;
      live_ += nbytes;
      return p;
    }
  }
  void* p = raw_alloc(blk);
  if (!p) {  // free what we hold and retry once before giving up
    clear_cache();
    p = raw_alloc(blk);
  }
  TG_CHECK(p, TG_ERROR_OUT_OF_MEMORY, strformat("allocation of %zu bytes failed", nbytes));
  live_ += nbytes;
  return p;
}
size_t Allocator::cache_limit() const {
  static const size_t limit = size_t(getenv_int("TG_ALLOC_CACHE_MB", 256)) << 20;
  return limit;
}
// Runs in destructors (~Buffer): it must not throw, so memory it can't cache (no memory for the bookkeeping) goes back
void Allocator::free(void* p, size_t n) {
  live_ -= n;
  size_t nbytes = block_size(n), limit = cache_limit();
  std::lock_guard<std::mutex> lk(mu_);
  if (nbytes > limit) return raw_free(p, nbytes);
  // a loop that allocates and frees the same sizes each step (a model's forward pass after another model's) keeps them:
  // the least recently freed memory makes room, not the newest
  while (cached_ + nbytes > limit) {
    Cached old = lru_.front();
    auto& same = cache_[old.n];
    same.erase(same.begin());  // the oldest of its size is the oldest entry of its list
    lru_.pop_front();
    cached_ -= old.n;
    raw_free(old.p, old.n);
  }
  try {
    auto e = lru_.insert(lru_.end(), Cached{nbytes, p});
    try {
      cache_[nbytes].push_back(e);
    } catch (...) {
      lru_.erase(e);
      throw;
    }
  } catch (...) {
    return raw_free(p, nbytes);
  }
  cached_ += nbytes;
}
size_t Allocator::cached_bytes() {
  std::lock_guard<std::mutex> lk(mu_);
  return cached_;
}
void Allocator::clear_cache() {
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& c : lru_) raw_free(c.p, c.n);
  lru_.clear();
  cache_.clear();
  cached_ = 0;
}

static std::atomic<int64_t> live_buffers{0};
int64_t Buffer::live_count() { return live_buffers.load(); }

Buffer::Buffer(std::string device, DType dtype, int64_t size) : device_(std::move(device)), dtype_(dtype), size_(size), dev_(&get_device(device_)) {
  TG_CHECK(size >= 0 && size <= INT64_MAX / dtype.itemsize(), TG_ERROR_INVALID_ARGUMENT,
           strformat("buffer of %lld %s elements: the size must be >= 0 and its bytes fit in int64", (long long)size, dtype.name().c_str()));
  live_buffers++;
}
Buffer::Buffer(std::shared_ptr<Buffer> base, size_t offset, DType dtype, int64_t size)
    : device_(base->device()), dtype_(dtype), size_(size), dev_(base->dev_), base_(std::move(base)), offset_(offset) {
  TG_CHECK(size >= 0 && offset + size_t(size) * dtype.itemsize() <= base_->nbytes(), TG_ERROR_INTERNAL,
           strformat("buffer view of %lld %s at byte %zu doesn't fit its base of %zu bytes", (long long)size, dtype.name().c_str(), offset, base_->nbytes()));
  live_buffers++;
}
Buffer::Buffer(std::string device, DType dtype, int64_t size, void* data, std::shared_ptr<const void> keep) : Buffer(std::move(device), dtype, size) {
  TG_CHECK(dev_->host_memory() && data && reinterpret_cast<uintptr_t>(data) % size_t(dtype.itemsize()) == 0, TG_ERROR_INTERNAL,
           "buffer: " + device_ + " can't use this memory in place");
  ptr_ = data, keep_ = std::move(keep);
}
Buffer::~Buffer() {
  live_buffers--;
  if (!ptr_ || keep_) return;
  if (base_) dev_->allocator().release_view(ptr_);
  else {
    dev_->allocator().free(ptr_, nbytes() ? nbytes() : 1);
    if (viz::on()) viz::memory(device_, -int64_t(nbytes()));
  }
}
void* Buffer::ptr() {
  if (ptr_) return ptr_;
  if (base_) return ptr_ = dev_->allocator().view(base_->ptr(), offset_, nbytes() ? nbytes() : 1);
  ptr_ = dev_->allocator().alloc(nbytes() ? nbytes() : 1);
  if (viz::on()) viz::memory(device_, int64_t(nbytes()));
  return ptr_;
}
void Allocator::copyin(void* dst, size_t offset, const void* src, size_t n) { std::memcpy(static_cast<char*>(dst) + offset, src, n); }
void Allocator::copyout(void* dst, const void* src, size_t offset, size_t n) { std::memcpy(dst, static_cast<const char*>(src) + offset, n); }

void Buffer::copyin(const void* src, size_t n) {
  TG_CHECK(n == nbytes(), TG_ERROR_INVALID_ARGUMENT, strformat("copyin: %zu bytes given, buffer holds %zu", n, nbytes()));
  if (!n) return;
  dev_->synchronize();  // a kernel still reading the old contents
  dev_->allocator().copyin(ptr(), 0, src, n);
}
void Buffer::copyout(void* dst, size_t n, size_t offset) {
  TG_CHECK(offset <= nbytes() && n <= nbytes() - offset, TG_ERROR_INVALID_ARGUMENT,
           strformat("copyout: bytes [%zu, %zu) asked, buffer holds %zu", offset, offset + n, nbytes()));
  dev_->synchronize();
  if (n) dev_->allocator().copyout(dst, ptr(), offset, n);
}
void Buffer::copyout(void* dst, size_t n) {
  TG_CHECK(n == nbytes(), TG_ERROR_INVALID_ARGUMENT, strformat("copyout: %zu bytes asked, buffer holds %zu", n, nbytes()));
  copyout(dst, n, 0);
}
void Buffer::copy_from(Buffer& src) {
  TG_CHECK(src.nbytes() == nbytes(), TG_ERROR_INTERNAL, strformat("copy: %zu bytes into a buffer of %zu", src.nbytes(), nbytes()));
  if (nbytes()) copy_between(*dev_, ptr(), 0, *src.dev_, src.ptr(), 0, nbytes());
}

void copy_between(Device& dd, void* dst, size_t doff, Device& sd, void* src, size_t soff, size_t n) {
  if (!n) return;
  sd.synchronize();  // the kernel writing src
  if (&dd != &sd) dd.synchronize();  // a kernel still reading dst's old contents
  if (!doff && !soff && &sd.allocator() == &dd.allocator() && dd.allocator().copy(dst, src, n)) return;  // a GPU's own memory
  if (sd.host_memory()) return dd.allocator().copyin(dst, doff, static_cast<char*>(src) + soff, n);
  if (dd.host_memory()) return sd.allocator().copyout(static_cast<char*>(dst) + doff, src, soff, n);
  std::vector<char> host(n);
  sd.allocator().copyout(host.data(), src, soff, n);
  dd.allocator().copyin(dst, doff, host.data(), n);
}

std::atomic<uint64_t> GlobalCounters::kernel_count{0}, GlobalCounters::global_ops{0}, GlobalCounters::global_mem{0}, GlobalCounters::compile_count{0},
    GlobalCounters::copy_count{0}, GlobalCounters::copy_bytes{0}, GlobalCounters::schedule_count{0}, GlobalCounters::lower_count{0};
std::atomic<double> GlobalCounters::time_sum_s{0};
void GlobalCounters::reset() {
  kernel_count = 0, global_ops = 0, global_mem = 0, compile_count = 0, copy_count = 0, copy_bytes = 0;
  schedule_count = 0, lower_count = 0, time_sum_s = 0;
}

}  // namespace tg
