// C libraries the library uses but never links: the GPU drivers, the OpenCL loader, SQLite (the BEAM cache) and zlib
// (gzip data sets) are dlopen'ed on first use, so building needs only a compiler and the library loads on machines
// without them. Each user declares the few types and functions it calls and resolves them with TG_DLSYM.
#pragma once
#include <dlfcn.h>

#include <initializer_list>
#include <string>

namespace tg {
// the first of `names` that loads (RTLD_LOCAL: its symbols stay out of the global namespace), or nullptr
void* dl_open_first(std::initializer_list<std::string> names);
}  // namespace tg

// resolve `f` from handle `h` into `api->f` (a function pointer of the declared type); the first missing one is named
// in `api->error`
#define TG_DLSYM(api, h, f, lib)                                                  \
  do {                                                                            \
    (api)->f = reinterpret_cast<decltype((api)->f)>(::dlsym((h), #f));            \
    if (!(api)->f && (api)->error.empty()) (api)->error = std::string(lib) + " has no " #f; \
  } while (0)
