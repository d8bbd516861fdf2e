"""The LLM rows of bench/results.json: a TinyLlama-1.1B-sized llama (22 layers, dim 2048, FFN 5632, 32 heads, 4 KV
heads, a 32000-token SentencePiece vocabulary, random weights; tests/tools/llm_models.py) written as Q4_0, Q8_0 and
Q4_K GGUF files into a temp dir (0.6 to 1.2 GB each, deleted after their rows), run by the library (tinygrad_c's LLM,
threads by NUM_CPU_THREADS) and by llama.cpp (libllama of @node-llama-cpp/linux-x64 through tests/tools/llama_ref.py,
the same n_threads), each side in a process of its own.
- `llm decode tinyllama <type> <n>t`: tokens/s of single-token steps after a 16-token prompt and 3 warm-up steps,
  each step delivering its logits to the host (ours .numpy(), llama.cpp's llama_get_logits_ith copied): the median of
  RUNS steps (fewer, at least 3, once the steps took DECODE_BUDGET_S). ratio = ours / llama.cpp (higher is better
  for us).
- `... bandwidth`: the same tokens/s against the bandwidth limit, the read bandwidth of this machine at the same
  thread count divided by the bytes a step reads (every weight, of the token embedding one row). The bandwidth is a
  C sum loop (as bench/ref_sum.c: OpenMP, gcc -O3 -march=native -fopenmp -ffast-math, compiled into the temp dir) over
  1 GiB, far above the L3, on transparent huge pages (madvise, as the library's weights), the median of 7 passes,
  measured just before and just after our side's run and the higher of the two taken (a shared machine's bandwidth
  moves by 2x within minutes: one measurement at the start gave limits our runs exceeded). ratio = ours / limit.
- `llm prefill tinyllama q4_0 512 2t`: tokens/s of a 512-token prompt in one eval from an empty cache, the median of
  PREFILL_RUNS after one warm-up (fewer, at least 1, once they took PREFILL_BUDGET_S).
TG_BENCH_LLM_RUNS sets RUNS (default 10; PREFILL_RUNS is a third of it, at least 2). TG_BENCH_LLM_SMOKE=1 runs the
same on a 2-layer model of dim 256 and writes no rows (a check that the script works).
usage: bench_llm.py results.json   (rows replace those of the same name)"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import merge_rows  # bench/, this script's directory

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
RUNS = int(os.environ.get("TG_BENCH_LLM_RUNS", "10"))
PREFILL_RUNS = max(2, RUNS // 3)
# a slow side stops early, after at least 3 decode steps or 1 prompt, once its timed runs have taken this long
DECODE_BUDGET_S, PREFILL_BUDGET_S = 40, 100
SMOKE = os.environ.get("TG_BENCH_LLM_SMOKE", "") not in ("", "0")
PROMPT, PREFILL, WARMUP, CONTEXT = 16, 512, 3, 1024
# (type, threads, what): every row there is
PLAN = [("q4_0", 1, ["decode"]), ("q4_0", 2, ["decode", "prefill"]), ("q8_0", 1, ["decode"]), ("q8_0", 2, ["decode"]), ("q4_k", 2, ["decode"])]
BW_BYTES, BW_PASSES = 1 << 30, 7

READER = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
int main(int argc, char** argv) {
  size_t n = (size_t)atoll(argv[1]) / sizeof(float);
  int threads = atoi(argv[2]), passes = atoi(argv[3]);
  /* on huge pages where the kernel gives them, as the library's weights are (up to 1.3x the bytes per second on 4K pages) */
  float* a = aligned_alloc(1 << 21, n * sizeof(float));
  madvise(a, n * sizeof(float), MADV_HUGEPAGE);
  /* first touch by the threads that read it, as the pages of a model's weights are */
#pragma omp parallel for num_threads(threads) schedule(static)
  for (size_t i = 0; i < n; i++) a[i] = 1.0f;
  for (int p = 0; p < passes; p++) {
    float s = 0.0f;
    double t = omp_get_wtime();
#pragma omp parallel for simd num_threads(threads) schedule(static) reduction(+ : s)
    for (size_t i = 0; i < n; i++) s += a[i];
    t = omp_get_wtime() - t;
    printf("%.6f %.0f\n", n * sizeof(float) / t / 1e9, s);
  }
  return 0;
}
"""


def bandwidth(d, threads):
  """Read GB/s at `threads` threads: the median of BW_PASSES sums over BW_BYTES."""
  exe = os.path.join(d, "read_bw")
  if not os.path.exists(exe):
    with open(exe + ".c", "w") as f: f.write(READER)
    subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", "-ffast-math", exe + ".c", "-o", exe], check=True)
  r = subprocess.run([exe, str(BW_BYTES), str(threads), str(BW_PASSES)], capture_output=True, text=True, check=True, timeout=600)
  return statistics.median(float(line.split()[0]) for line in r.stdout.splitlines())


def child(side, path, threads, what):
  """In the child process: {"decode": tok/s, "prefill": tok/s, "load_s": s} of one side on one file."""
  import numpy as np
  t0 = time.perf_counter()
  if side == "ours":
    sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
    from tinygrad_c.llm import LLM
    m = LLM(path, context=CONTEXT)
    step, reset = (lambda toks: m(toks).numpy()), m.reset
  else:
    import llama_ref
    m = llama_ref.Model(path, n_ctx=CONTEXT, n_threads=threads, n_batch=PREFILL)
    step, reset = m.eval, m.reset
  out = {"load_s": time.perf_counter() - t0}
  rng = np.random.default_rng(0)
  toks = lambda n: [int(t) for t in rng.integers(3, 32000 if not SMOKE else 1000, n)]
  if "decode" in what:
    reset()
    step(toks(PROMPT))
    for t in toks(WARMUP): step([t])  # ours: the first step runs, the second captures the JIT, the rest replay
    ts = []
    for t in toks(RUNS):
      s = time.perf_counter()
      step([t])
      ts.append(time.perf_counter() - s)
      if len(ts) >= 3 and sum(ts) > DECODE_BUDGET_S: break
    out["decode"], out["decode_runs"] = 1 / statistics.median(ts), len(ts)
  if "prefill" in what:
    prompt, ts = toks(PREFILL), []
    for i in range(PREFILL_RUNS + 1):  # the first compiles
      reset()
      s = time.perf_counter()
      step(prompt)
      if i: ts.append(time.perf_counter() - s)
      if ts and sum(ts) > PREFILL_BUDGET_S: break
    out["prefill"], out["prefill_runs"] = PREFILL / statistics.median(ts), len(ts)
  print(json.dumps(out))


def run_side(side, path, threads, what):
  env = dict(os.environ, NUM_CPU_THREADS=str(threads))
  r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", side, path, str(threads), ",".join(what)], capture_output=True,
                     text=True, env=env, timeout=3600)
  if r.returncode != 0: raise RuntimeError(f"{side} on {os.path.basename(path)} at {threads}t failed: {r.stderr[-3000:]}")
  return json.loads(r.stdout.strip().splitlines()[-1])


def row(name, value, reference, ref_value):
  return {"name": name, "value": round(value, 3), "unit": "tok/s", "reference": reference, "reference_value": round(ref_value, 3),
          "ratio": round(value / ref_value, 3)}


def main(out_path):
  import llama_ref
  import llm_models
  if not llama_ref.available(): raise SystemExit("bench_llm: llama.cpp is missing (scripts/llama_deps.sh build/llama)")
  config = dict(llm_models.TINYLLAMA, **(dict(n_layer=2, dim=256, ffn=512, n_head=4, n_kv_head=2) if SMOKE else {}))
  tokenizer = llm_models.spm_tokenizer(n_vocab=config["vocab"])
  rows, table = [], []
  with tempfile.TemporaryDirectory(prefix="bench_llm_") as d:
    for typ in dict.fromkeys(p[0] for p in PLAN):
      path = os.path.join(d, f"tinyllama_{typ}.gguf")
      t0 = time.perf_counter()
      total, per_token = llm_models.tinyllama(path, llm_models.TYPE_NAMES[typ], tokenizer=tokenizer, config=config)
      print(f"{typ}: {total / 1e6:.0f} MB of weights, {per_token / 1e6:.0f} MB read per token, written in {time.perf_counter() - t0:.1f} s",
            flush=True)
      for _, threads, what in (p for p in PLAN if p[0] == typ):
        bw = [bandwidth(d, threads)] if "decode" in what else []
        ours = run_side("ours", path, threads, what)
        if "decode" in what: bw.append(bandwidth(d, threads))
        ref = run_side("llama.cpp", path, threads, what)
        if "decode" in what:
          name, limit = f"llm decode tinyllama {typ} {threads}t", max(bw) * 1e9 / per_token
          print(f"read bandwidth at {threads}t: {bw[0]:.1f} GB/s before our run, {bw[1]:.1f} after", flush=True)
          rows += [row(name, ours["decode"], "llama.cpp", ref["decode"]), row(name + " bandwidth", ours["decode"], "bandwidth limit", limit)]
          table.append((name, ours["decode"], ref["decode"], limit))
          print(f"{name}: ours {ours['decode']:.2f} tok/s ({ours['decode_runs']} steps), llama.cpp {ref['decode']:.2f} tok/s "
                f"({ref['decode_runs']}), bandwidth limit {limit:.2f} tok/s (loads: ours {ours['load_s']:.1f} s, llama.cpp {ref['load_s']:.1f} s)",
                flush=True)
        if "prefill" in what:
          name = f"llm prefill tinyllama {typ} {PREFILL} {threads}t"
          rows.append(row(name, ours["prefill"], "llama.cpp", ref["prefill"]))
          table.append((name, ours["prefill"], ref["prefill"], None))
          print(f"{name}: ours {ours['prefill']:.1f} tok/s ({ours['prefill_runs']} runs), llama.cpp {ref['prefill']:.1f} tok/s "
                f"({ref['prefill_runs']})", flush=True)
      os.remove(path)
  print(f"\n{'tok/s':<36}{'ours':>10}{'llama.cpp':>11}{'ratio':>8}{'bw limit':>10}{'of limit':>10}")
  for name, ours, ref, limit in table:
    print(f"{name:<36}{ours:>10.2f}{ref:>11.2f}{ours / ref:>8.2f}" + (f"{limit:>10.2f}{ours / limit:>10.2f}" if limit else ""))
  if SMOKE: return
  merge_rows.merge(out_path, rows)


if __name__ == "__main__":
  if len(sys.argv) > 1 and sys.argv[1] == "--child": child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5].split(","))
  else: main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bench", "results.json"))
