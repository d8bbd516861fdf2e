#include <cstdlib>
#include <cstring>

#include "helpers.h"
#include "runtime/device.h"

namespace tg {

void* Allocator::alloc(size_t nbytes) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = cache_.find(nbytes);
    if (it != cache_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      cached_ -= nbytes;
      return p;
    }
  }
  void* p = raw_alloc(nbytes);
  if (!p) {  // free what we hold and retry once before giving up
    clear_cache();
    p = raw_alloc(nbytes);
  }
  TG_CHECK(p, TG_ERROR_OUT_OF_MEMORY, strformat("allocation of %zu bytes failed", nbytes));
  return p;
}
void Allocator::free(void* p, size_t nbytes) {
  static const size_t limit = size_t(getenv_int("TG_ALLOC_CACHE_MB", 256)) << 20;
  std::lock_guard<std::mutex> lk(mu_);
  if (cached_ + nbytes > limit) return raw_free(p, nbytes);
  cache_[nbytes].push_back(p);
  cached_ += nbytes;
}
size_t Allocator::cached_bytes() {
  std::lock_guard<std::mutex> lk(mu_);
  return cached_;
}
void Allocator::clear_cache() {
  std::lock_guard<std::mutex> lk(mu_);
  for (auto& [n, v] : cache_)
    for (void* p : v) raw_free(p, n);
  cache_.clear();
  cached_ = 0;
}

Buffer::Buffer(std::string device, DType dtype, int64_t size) : device_(std::move(device)), dtype_(dtype), size_(size), dev_(&get_device(device_)) {
  TG_CHECK(size >= 0 && size <= INT64_MAX / dtype.itemsize(), TG_ERROR_INVALID_ARGUMENT,
           strformat("buffer of %lld %s elements: the size must be >= 0 and its bytes fit in int64", (long long)size, dtype.name().c_str()));
}
Buffer::Buffer(std::shared_ptr<Buffer> base, size_t offset, DType dtype, int64_t size)
    : device_(base->device()), dtype_(dtype), size_(size), dev_(base->dev_), base_(std::move(base)), offset_(offset) {
  TG_CHECK(size >= 0 && offset + size_t(size) * dtype.itemsize() <= base_->nbytes(), TG_ERROR_INTERNAL,
           strformat("buffer view of %lld %s at byte %zu doesn't fit its base of %zu bytes", (long long)size, dtype.name().c_str(), offset, base_->nbytes()));
}
Buffer::Buffer(std::string device, DType dtype, int64_t size, void* data, std::shared_ptr<const void> keep) : Buffer(std::move(device), dtype, size) {
  TG_CHECK(dev_->host_memory() && data && reinterpret_cast<uintptr_t>(data) % size_t(dtype.itemsize()) == 0, TG_ERROR_INTERNAL,
           "buffer: " + device_ + " can't use this memory in place");
  ptr_ = data, keep_ = std::move(keep);
}
Buffer::~Buffer() {
  if (ptr_ && !base_ && !keep_) dev_->allocator().free(ptr_, nbytes() ? nbytes() : 1);
}
void* Buffer::ptr() {
  if (!ptr_) ptr_ = base_ ? static_cast<char*>(base_->ptr()) + offset_ : dev_->allocator().alloc(nbytes() ? nbytes() : 1);
  return ptr_;
}
void Buffer::copyin(const void* src, size_t n) {
  TG_CHECK(n == nbytes(), TG_ERROR_INVALID_ARGUMENT, strformat("copyin: %zu bytes given, buffer holds %zu", n, nbytes()));
  if (n) std::memcpy(ptr(), src, n);
}
void Buffer::copyout(void* dst, size_t n, size_t offset) {
  TG_CHECK(offset <= nbytes() && n <= nbytes() - offset, TG_ERROR_INVALID_ARGUMENT,
           strformat("copyout: bytes [%zu, %zu) asked, buffer holds %zu", offset, offset + n, nbytes()));
  dev_->synchronize();
  if (n) std::memcpy(dst, static_cast<char*>(ptr()) + offset, n);
}
void Buffer::copyout(void* dst, size_t n) {
  TG_CHECK(n == nbytes(), TG_ERROR_INVALID_ARGUMENT, strformat("copyout: %zu bytes asked, buffer holds %zu", n, nbytes()));
  dev_->synchronize();
  if (n) std::memcpy(dst, ptr(), n);
}

std::atomic<uint64_t> GlobalCounters::kernel_count{0}, GlobalCounters::global_ops{0}, GlobalCounters::global_mem{0}, GlobalCounters::compile_count{0},
    GlobalCounters::schedule_count{0}, GlobalCounters::lower_count{0};
std::atomic<double> GlobalCounters::time_sum_s{0};
void GlobalCounters::reset() { kernel_count = 0, global_ops = 0, global_mem = 0, compile_count = 0, schedule_count = 0, lower_count = 0, time_sum_s = 0; }

}  // namespace tg
