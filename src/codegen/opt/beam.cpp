#include "codegen/opt/beam.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "codegen/runner.h"
#include "runtime/diskcache.h"
#include "runtime/threadpool.h"

namespace tg {

std::atomic<uint64_t> beam_timing_runs{0};

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

const std::vector<Opt>& actions() {
  static const std::vector<Opt> acts = [] {
    std::vector<Opt> a;
    auto add = [&](OptOps op, std::initializer_list<int64_t> amts, int naxes) {
      for (int64_t amt : amts)
        for (int ax = 0; ax < naxes; ax++) a.push_back({op, ax, amt});
    };
    add(OptOps::UPCAST, {0, 2, 3, 4, 5, 7, 8, 16}, 8);
    add(OptOps::UNROLL, {0, 4, 7, 8, 16}, 5);
    add(OptOps::LOCAL, {2, 3, 4, 8, 13, 16, 29}, 6);
    add(OptOps::GROUPTOP, {13, 16, 28, 29, 32, 49, 64, 256}, 3);
    add(OptOps::GROUP, {0, 4, 8, 16}, 3);
    add(OptOps::PADTO, {32}, 7);
    a.push_back({OptOps::LOCAL, 0, 32}), a.push_back({OptOps::LOCAL, 6, 2});
    a.push_back({OptOps::TC, 0, 0, {-1, 0, 1}});
    for (int ax = 0; ax < 9; ax++) a.push_back({OptOps::TC, ax, 0, {-1, 2, 1}});
    for (int a0 = 0; a0 < 5; a0++)
      for (int a1 = a0 + 1; a1 < 5; a1++) a.push_back({OptOps::SWAP, a0, a1});
    add(OptOps::THREAD, {2, 3, 4, 5, 8, 12, 16, 24, 32, 64}, 3);
    add(OptOps::MERGE, {0}, 4);
    add(OptOps::PACK, {0, 4, 16}, 3);  // (steps of a GPU's stages; a CPU refuses them)
    a.push_back({OptOps::NOLOCALS});
    return a;
  }();
  return acts;
}

// Scratch buffers of the kernel's real sizes, filled with small random values: random so no NaN/denormal fast or slow
// path distorts a time, small and positive for integers so no index or divisor goes wild.
std::vector<std::shared_ptr<Buffer>> scratch_buffers(const UOpRef& ast, const std::string& device) {
  std::vector<std::shared_ptr<Buffer>> bufs;
  std::mt19937 g(0);
  for (auto& u : ast->toposort()) {
    if (u->op != Ops::DEFINE_GLOBAL) continue;
    size_t i = size_t(std::get<int64_t>(u->arg));
    if (bufs.size() <= i) bufs.resize(i + 1);
    DType dt = u->dtype.base();
    auto b = std::make_shared<Buffer>(device, dt, u->dtype.size);
    std::vector<unsigned char> bytes(size_t(u->dtype.size) * size_t(dt.itemsize()));
    for (size_t e = 0; e < bytes.size(); e += size_t(dt.itemsize())) {
      float f = std::uniform_real_distribution<float>(-1, 1)(g);
      double d = f;
      if (dt == dtypes::float32) std::memcpy(&bytes[e], &f, 4);
      else if (dt == dtypes::float64) std::memcpy(&bytes[e], &d, 8);
      else bytes[e] = uint8_t(1 + g() % 8);  // little endian: the low byte is the value
    }
    b->copyin(bytes.data(), bytes.size());
    bufs[i] = std::move(b);
  }
  return bufs;
}

struct Candidate {
  Scheduler k;
  std::shared_ptr<CompiledRunner> prog;
  double tm = INFINITY;
};

class Search {
 public:
  Search(const UOpRef& ast, const std::string& name, Device& dev) : ast_(ast), name_(name), dev_(dev), bufs_(scratch_buffers(ast, dev.name())) {
    for (auto& b : bufs_) ptrs_.push_back(b ? b->ptr() : nullptr);
    show_ = DEBUG >= 1 || ::isatty(2);
  }

  std::vector<Opt> run(int amt) {
    const Renderer& ren = dev_.renderer();
    Scheduler heur(ast_, ren);
    hand_coded_optimizations(heur);
    // the seeds: the heuristics' list and its prefixes (so the search can take another turn after any of its actions)
    std::vector<Scheduler> seeds;
    for (size_t n = heur.applied_opts.empty() ? 0 : 1; n <= heur.applied_opts.size(); n++) {
      std::vector<Opt> pre(heur.applied_opts.begin(), heur.applied_opts.begin() + long(n));
      seeds.push_back(optimize(ast_, ren, &pre));
    }
    std::vector<Candidate> beam = evaluate(std::move(seeds), 0);
    TG_CHECK(!beam.empty(), TG_ERROR_COMPILE, "BEAM " + name_ + ": the heuristics' kernel did not compile");
    beam.erase(beam.begin() + long(std::min(beam.size(), size_t(amt))), beam.end());
    const double min_progress = BEAM_MIN_PROGRESS.value() * 1e-6;
    for (int round = 1;; round++) {
      std::vector<Scheduler> next;
      for (auto& b : beam)
        for (auto& c : kernel_actions(b.k)) next.push_back(std::move(c));
      std::vector<Candidate> timed = evaluate(std::move(next), round);
      bool exiting = timed.empty() || beam[0].tm - timed[0].tm < min_progress;
      // the beam moves on while it gains; on the way out it keeps a last, smaller gain
      size_t keep = exiting ? (!timed.empty() && timed[0].tm < beam[0].tm) : std::min(timed.size(), size_t(amt));
      if (keep) beam.assign(std::make_move_iterator(timed.begin()), std::make_move_iterator(timed.begin() + long(keep)));
      if (exiting) break;
    }
    if (show_) std::fprintf(stderr, "\n");
    // a runoff against the heuristics' kernel, both timed alternately over more runs than the search gave each: a time
    // of one run (a long kernel within the timing budget) can be a lucky one, and BEAM must not end slower than where it began
    if (beam[0].k.applied_opts != heur.applied_opts) {
      auto h = compile_spec(get_program(ast_, "test", ren, &heur.applied_opts), dev_);
      double tb = INFINITY, th = INFINITY;
      for (int i = 0; i < 5; i++) tb = std::min(tb, runoff(*beam[0].prog)), th = std::min(th, runoff(*h));
      if (BEAM_DEBUG >= 1) std::fprintf(stderr, "BEAM %s: runoff %.2f us against the heuristics' %.2f us\n", name_.c_str(), tb * 1e6, th * 1e6);
      if (th <= tb) return heur.applied_opts;
    }
    if (BEAM_DEBUG >= 1)
      std::fprintf(stderr, "BEAM %s: final %.2f us (heuristics %.2f us) in %.2f s: %s\n", name_.c_str(), beam[0].tm * 1e6, heur_tm_ * 1e6, since(t0_),
                   opts_str(beam[0].k.applied_opts).c_str());
    return beam[0].k.applied_opts;
  }

 private:
  // compiles the new ones (unique sources only) on worker threads, then times them one by one; fastest first
  std::vector<Candidate> evaluate(std::vector<Scheduler> ks, int round) {
    std::vector<Candidate> cands;
    for (auto& k : ks) cands.push_back({std::move(k), nullptr});
    std::atomic<size_t> next{0};
    std::mutex mu;
    auto worker = [&] {
      Context no_disk({{"CACHELEVEL", 0}});  // candidates stay out of the kernel disk cache
      for (size_t i; (i = next++) < cands.size();) {
        try {
          auto st = Clock::now();
          ProgramSpec p = get_program(ast_, "test", dev_.renderer(), &cands[i].k.applied_opts);
          if (BEAM_UOPS_MAX > 0 && p.uops >= size_t(BEAM_UOPS_MAX.get())) continue;
          {
            std::lock_guard<std::mutex> lk(mu);
            if (!seen_.insert(p.src).second) continue;
          }
          cands[i].prog = compile_spec(std::move(p), dev_);
          if (BEAM_TIMEOUT_SEC > 0 && since(st) > BEAM_TIMEOUT_SEC.value()) cands[i].prog = nullptr;  // as tinygrad: a slow compile is dropped
        } catch (const Error& e) {
          if (BEAM_DEBUG >= 2) std::fprintf(stderr, "BEAM %s: %s failed: %s\n", name_.c_str(), opts_str(cands[i].k.applied_opts).c_str(), e.what());
        }
      }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < std::max(1, std::min(num_cpu_threads(), 4)); t++) pool.emplace_back(worker);
    for (auto& t : pool) t.join();

    std::vector<Candidate> timed;
    uint64_t least_ops = UINT64_MAX;
    for (auto& c : cands)
      if (c.prog) least_ops = std::min(least_ops, c.prog->ops);
    for (auto& c : cands) {
      if (!c.prog || c.prog->ops / 1000 > least_ops) continue;  // 1000x the least compute: not worth a run
      try {
        c.tm = time(*c.prog, round == 0 ? INFINITY : best_ * 3);
      } catch (const Error& e) {  // a launch the device refuses (a work-group past its registers): not a candidate
        if (BEAM_DEBUG >= 2) std::fprintf(stderr, "BEAM %s: %s failed to run: %s\n", name_.c_str(), opts_str(c.k.applied_opts).c_str(), e.what());
        continue;
      }
      if (round == 0 && &c == &cands.back()) heur_tm_ = c.tm;
      best_ = std::min(best_, c.tm);
      timed.push_back(std::move(c));
      if (show_)
        std::fprintf(stderr, "\rBEAM %s: round %d, %zu/%zu candidates, best %.2f us\033[K", name_.c_str(), round, timed.size(), cands.size(), best_ * 1e6);
    }
    std::stable_sort(timed.begin(), timed.end(), [](const Candidate& a, const Candidate& b) { return a.tm < b.tm; });
    if (BEAM_DEBUG >= 1 && !timed.empty())
      std::fprintf(stderr, "%sBEAM %s round %d (%.2f s): %zu candidates, %zu timed, best %.2f us %s\n", show_ ? "\n" : "", name_.c_str(), round, since(t0_),
                   cands.size(), timed.size(), timed[0].tm * 1e6, opts_str(timed[0].k.applied_opts).c_str());
    return timed;
  }

  double runoff(const CompiledRunner& k) {
    beam_timing_runs++;
    return run_kernel(k, ptrs_.data());
  }
  // the fastest of a few runs: at least 3 and 2 ms, at most 10 runs or 30 ms; one run slower than `early_stop` ends it
  double time(const CompiledRunner& k, double early_stop) {
    double best = INFINITY, spent = 0;
    for (int i = 0; i < 10; i++) {
      double t = run_kernel(k, ptrs_.data());
      beam_timing_runs++;
      best = std::min(best, t), spent += t;
      if (t > early_stop || spent > 0.03 || (i >= 2 && spent > 0.002)) break;
    }
    return best;
  }

  UOpRef ast_;
  std::string name_;
  Device& dev_;
  std::vector<std::shared_ptr<Buffer>> bufs_;
  std::vector<void*> ptrs_;
  std::set<std::string> seen_;
  double best_ = INFINITY, heur_tm_ = INFINITY;
  bool show_;
  Clock::time_point t0_ = Clock::now();
};

}  // namespace

std::vector<Scheduler> kernel_actions(const Scheduler& s) {
  std::vector<Scheduler> out;
  const int64_t max_up = BEAM_UPCAST_MAX, max_lcl = BEAM_LOCAL_MAX;
  for (auto& a : actions()) {
    Scheduler s2 = s;
    try {
      s2.apply_opt(a);
    } catch (const OptError&) {
      continue;
    }
    int64_t up = 1, lcl = 1;
    auto shape = s2.full_shape();
    auto types = s2.axis_types();
    for (size_t i = 0; i < shape.size(); i++) {
      if (types[i] == AxisType::UPCAST || types[i] == AxisType::UNROLL) up *= shape[i];
      else if (types[i] == AxisType::WARP || types[i] == AxisType::LOCAL || types[i] == AxisType::GROUP_REDUCE) lcl *= shape[i];
    }
    if (up <= max_up && lcl <= max_lcl) out.push_back(std::move(s2));
  }
  return out;
}

std::vector<Opt> beam_opts(const UOpRef& ast, const std::string& name, Device& dev, int amt, bool use_cache) {
  if (sequential_kernel(ast)) return {};
  const Target& t = dev.renderer().target();
  // the key: the AST's text (deterministic) and what the choice depends on besides: device, its target, cores, width
  std::string key = strformat("beam v1\n%s\n%s %s vec%d threads%d cores%d\namt %d", ast->str().c_str(), dev.name().c_str(), t.device.c_str(),
                              t.vector_bytes, int(t.has_threads), num_cpu_threads(), amt);
  if (use_cache)
    if (auto hit = beam_cache_get(key)) {
      try {
        std::vector<Opt> opts = parse_opts(*hit);
        optimize(ast, dev.renderer(), &opts);  // a stale or damaged row that no longer applies is searched again
        return opts;
      } catch (const Error& e) {
        if (BEAM_DEBUG >= 1) std::fprintf(stderr, "BEAM %s: cached opts %s don't apply (%s); searching\n", name.c_str(), hit->c_str(), e.what());
      }
    }
  std::vector<Opt> opts = Search(ast, name, dev).run(amt);
  if (use_cache) beam_cache_put(key, opts_str(opts));
  return opts;
}

}  // namespace tg
