// Owned C API references, options and temp dirs for the tests, released at the end of their scope.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <utility>

#include "tinygrad.h"

// one owned reference to a handle; a copy takes another reference
template <class H, H* (*Retain)(H*), void (*Release)(H*)>
struct Owned {
  H* p = nullptr;
  Owned() = default;
  Owned(H* h) : p(h) {}
  Owned(const Owned& o) : p(o.p ? Retain(o.p) : nullptr) {}
  Owned& operator=(Owned o) {
    std::swap(p, o.p);
    return *this;
  }
  ~Owned() { Release(p); }
  operator H*() const { return p; }
  H* take() { return std::exchange(p, nullptr); }
};
using T = Owned<tg_tensor, tg_tensor_retain, tg_tensor_release>;
using M = Owned<tg_module, tg_module_retain, tg_module_release>;
using S = Owned<tg_state, tg_state_retain, tg_state_release>;
using Opt = Owned<tg_optimizer, tg_optimizer_retain, tg_optimizer_release>;

// an option (tg_set_option) for the life of a scope; the environment's value applies again after
struct OptionScope {
  const char* name;
  OptionScope(const char* n, const char* value) : name(n) { EXPECT_EQ(tg_set_option(n, value), TG_OK) << tg_last_error_message(); }
  ~OptionScope() { tg_set_option(name, nullptr); }
};
struct Training : OptionScope {
  Training() : OptionScope("TRAINING", "1") {}
};
struct NoJit : OptionScope {
  NoJit() : OptionScope("JIT", "0") {}
};

// a new empty directory, removed with what it holds
struct TmpDir {
  std::filesystem::path p;
  TmpDir() {
    char t[] = "/tmp/tg_test_XXXXXX";
    p = mkdtemp(t);
  }
  ~TmpDir() { std::filesystem::remove_all(p); }
};
