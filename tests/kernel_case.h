// Kernels from tensor graphs for the optimizer's tests: a graph is scheduled, its kernels run one by one, the last with
// the Opt list under test, so any list can be checked against the unoptimized kernel on the same random inputs.
#pragma once
#include <random>
#include <vector>

#include "engine/realize.h"
#include "tensor/tensor.h"

namespace tg::test {

inline Tensor randt(Shape s, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  int64_t n = 1;
  for (auto d : s) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(g);
  return Tensor::from_data(v.data(), v.size() * sizeof(float), dtypes::float32, s, "CPU");
}

// A scheduled graph with its buffers: kernels run one by one, the last with the opts under test.
struct Case {
  std::shared_ptr<const Schedule> sched;
  std::vector<std::shared_ptr<Buffer>> bufs;
  explicit Case(const Tensor& out) {
    Normalized n = normalize({out.uop()});
    sched = create_schedule(n.sink, n.specs);
    for (size_t i = 0; i < sched->slots.size(); i++)
      bufs.push_back(i < n.inputs.size() ? buffer_of(n.inputs[i].get())
                                         : std::make_shared<Buffer>("CPU", sched->slots[i].first, sched->slots[i].second));
  }
  const UOpRef& last() const { return sched->kernels.back()->ast; }
  // runs every kernel (the last with `opts`) and returns the last kernel's output
  std::vector<float> run(const std::vector<Opt>& opts) {
    Device& dev = get_device("CPU");
    static const std::vector<Opt> none;
    for (size_t i = 0; i < sched->kernels.size(); i++) {
      auto& k = *sched->kernels[i];
      auto c = compile_program(k.ast, k.name, dev, i + 1 == sched->kernels.size() ? &opts : &none);
      std::vector<void*> ptrs;
      for (int s : k.slots) ptrs.push_back(bufs[size_t(s)]->ptr());
      run_kernel(*c, ptrs.data());
    }
    auto& out = bufs[size_t(sched->kernels.back()->slots[0])];
    std::vector<float> v(size_t(out->size()));
    out->copyout(v.data(), v.size() * sizeof(float));
    return v;
  }
};

}  // namespace tg::test
