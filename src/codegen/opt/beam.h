// BEAM search (tinygrad's codegen/opt/search.py): try lists of Opt actions on the real device, keep the fastest, and
// remember the choice in a SQLite database so later processes skip the search.
#pragma once
#include <atomic>
#include <string>
#include <vector>

#include "codegen/opt/postrange.h"
#include "runtime/device.h"

namespace tg {

// The opts for `ast` on `dev`: from the BEAM cache (unless IGNORE_BEAM_CACHE or CACHELEVEL=0 or `use_cache` is false),
// else a search of width `amt` whose result is stored there. Never slower, as timed, than the heuristics' choice.
std::vector<Opt> beam_opts(const UOpRef& ast, const std::string& name, Device& dev, int amt, bool use_cache = true);
// Every kernel one action away from `s` that the target takes, within BEAM_UPCAST_MAX and BEAM_LOCAL_MAX (tinygrad's
// get_kernel_actions, plus UPCAST/UNROLL by 8 and 16, the CPU vector widths in floats).
std::vector<Scheduler> kernel_actions(const Scheduler& s);
// Candidate runs timed so far in this process: a test checks that a cached choice times nothing.
extern std::atomic<uint64_t> beam_timing_runs;

}  // namespace tg
