// The catch-all boundary: every extern "C" entry point runs its body through these, so no C++ exception crosses the ABI.
#pragma once
#include <atomic>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

#include "helpers.h"

namespace tg::api {

void set_error(tg_status code, const std::string& msg);
tg_status status_from_current_exception();  // call inside catch (...): records the error, returns its code

// Body returns tg_status (or void for TG_OK). Any exception becomes a status and a message.
template <class F>
tg_status call(F&& f) noexcept {
  try {
    if constexpr (std::is_void_v<decltype(f())>) {
      f();
      return TG_OK;
    } else return f();
  } catch (...) {
    return status_from_current_exception();
  }
}
// Body returns a pointer; any exception becomes NULL with the error recorded.
template <class F>
auto make(F&& f) noexcept -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    status_from_current_exception();
    return nullptr;
  }
}
// A failed argument check: records the error and returns it.
#define TG_ARG(cond, msg) TG_CHECK(cond, TG_ERROR_INVALID_ARGUMENT, msg)

// Handles of every type alive in the process (tg_live_handles).
inline std::atomic<int64_t> live_handle_count{0};

// The handles a C caller holds, each with its reference count. Looking a handle up here before touching it turns
// NULL and released handles into errors instead of crashes. Instances are never destroyed (handles may outlive statics).
template <class H>
class LiveHandles {
 public:
  H* add(H* h) {
    std::lock_guard<std::mutex> lk(mu_);
    rc_[h] = 1;
    live_handle_count.fetch_add(1, std::memory_order_relaxed);
    return h;
  }
  bool live(const H* h) {
    std::lock_guard<std::mutex> lk(mu_);
    return rc_.count(h) > 0;
  }
  // the handle behind a C pointer; NULL and released handles are TG_ERROR_INVALID_ARGUMENT naming `fn` and `what`
  H* get(const H* h, const std::string& fn, const char* what) {
    TG_ARG(h, fn + ": " + what + " is NULL");
    TG_ARG(live(h), fn + ": " + what + " is not a live handle (released?)");
    return const_cast<H*>(h);
  }
  bool retain(const H* h) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = rc_.find(h);
    return it != rc_.end() && ++it->second > 0;
  }
  // drops one reference, deleting the handle with the last; false if `h` was not live
  bool release(H* h) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = rc_.find(h);
      if (it == rc_.end()) return false;
      if (--it->second > 0) return true;
      rc_.erase(it);
    }
    live_handle_count.fetch_sub(1, std::memory_order_relaxed);
    delete h;
    return true;
  }

 private:
  std::mutex mu_;
  std::unordered_map<const H*, int64_t> rc_;
};


// The live set of one handle type (jits, plans, modules, optimizers, states).
template <class H>
LiveHandles<H>& handles_of() {
  static auto* h = new LiveHandles<H>();
  return *h;
}

}  // namespace tg::api
