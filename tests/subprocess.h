// For tests that run a second process under a chosen environment: a private temporary directory, shell quoting, and
// reading back what the process wrote.
#pragma once
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace tg::test {

inline std::string quote(const std::string& s) {  // single-quoted for /bin/sh
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
struct TempDir {
  std::string path;
  TempDir() {
    char t[] = "/tmp/tg-test-XXXXXX";
    path = ::mkdtemp(t) ? t : "";
  }
  ~TempDir() { std::system(("chmod -R u+rwx " + quote(path) + " 2>/dev/null; rm -rf " + quote(path)).c_str()); }
};
// a helper binary built next to the running test binary (tests/tools/)
inline std::string sibling_binary(const std::string& name) {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string self = n > 0 ? std::string(buf, size_t(n)) : std::string("./tg_tests");
  return self.substr(0, self.rfind('/') + 1) + name;
}
inline std::string slurp(const std::string& f) {
  std::ifstream in(f);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tg::test
