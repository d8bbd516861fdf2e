// Owned C API references, options and temp dirs for the tests, released at the end of their scope, and the small
// helpers the C API suites share.
#pragma once
#include <gtest/gtest.h>
#include <pthread.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

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

// an owned tg_jit
struct Jit {
  tg_jit* j;
  Jit(tg_jit_fn fn, void* u) : j(tg_jit_create(fn, u)) {}
  ~Jit() { tg_jit_release(j); }
  operator tg_jit*() const { return j; }
};
// in a tg_jit_fn: return the thread's last error when a call fails
#define TRY(x)                        \
  do {                                \
    if (!(x)) return tg_last_error(); \
  } while (0)

// a float32 tensor's elements
inline std::vector<float> data(tg_tensor* t) {
  std::vector<float> v(size_t(tg_tensor_numel(t)));
  EXPECT_EQ(tg_tensor_to_data(t, v.data(), v.size() * sizeof(float)), TG_OK) << tg_last_error_message();
  return v;
}
// n normal samples (mean shift, deviation scale) from a fixed seed
inline std::vector<float> randv(size_t n, uint32_t seed, float scale = 1, float shift = 0) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g) + shift;
  return v;
}

// runs f on a thread with a 256 KiB stack, as an embedding application's worker thread might have
inline void on_small_stack(std::function<void()> f) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
  pthread_t th;
  auto run = [](void* p) -> void* {
    (*static_cast<std::function<void()>*>(p))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&th, &attr, run, &f), 0);
  pthread_join(th, nullptr);
  pthread_attr_destroy(&attr);
}
