// The catch-all boundary: every extern "C" entry point runs its body through these, so no C++ exception crosses the ABI.
#pragma once
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
// A failed argument check: records the error and returns it.
#define TG_ARG(cond, msg) TG_CHECK(cond, TG_ERROR_INVALID_ARGUMENT, msg)

}  // namespace tg::api
