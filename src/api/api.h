// The catch-all boundary: every extern "C" entry point runs its body through these, so no C++ exception crosses the ABI.
#pragma once
#include <cstring>
#include <new>
#include <string>

#include "helpers.h"

namespace tg::api {

// Records the calling thread's error. Never throws: with no memory left for the message it keeps the code and says
// "out of memory" (short enough to need no allocation).
void set_error(tg_status code, const char* msg) noexcept;
inline void set_error(tg_status code, const std::string& msg) noexcept { set_error(code, msg.c_str()); }
tg_status status_from_current_exception() noexcept;  // call inside catch (...): records the error, returns its code

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
// A text result into a caller's buffer: NUL-terminated, truncated to size; the full length, or -1 with the error recorded
// (tg_expr_render, tg_uop_print, ...). `text` returns the std::string.
template <class F>
int64_t text_result(char* buf, size_t size, const char* fn, F&& text) noexcept {
  int64_t n = -1;
  tg_status s = call([&] {
    std::string r = text();
    TG_CHECK(buf || size == 0, TG_ERROR_INVALID_ARGUMENT, std::string(fn) + ": buf is NULL with size > 0");
    if (size) {
      size_t k = r.size() < size - 1 ? r.size() : size - 1;
      std::memcpy(buf, r.data(), k);
      buf[k] = 0;
    }
    n = int64_t(r.size());
  });
  return s == TG_OK ? n : -1;
}
// A failed argument check: records the error and returns it.
#define TG_ARG(cond, msg) TG_CHECK(cond, TG_ERROR_INVALID_ARGUMENT, msg)

}  // namespace tg::api
