#include "runtime/dynlib.h"

namespace tg {
void* dl_open_first(std::initializer_list<std::string> names) {
  for (auto& n : names)
    if (void* h = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}
}  // namespace tg
