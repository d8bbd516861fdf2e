/* Generate text with a GGUF language model from C:
 *   llm --model M.gguf --prompt "..." [-n 128] [--temp T] [--top-k K] [--top-p P] [--repeat-penalty R] [--seed S] [--ctx N] [--ids]
 * Tokenizes the prompt with the file's tokenizer, streams each generated token's text as it comes, then prints the
 * prompt's and the generation's tokens per second. --temp 0 is greedy. --ids ends with the token ids, one line for the
 * prompt's and one for the generation's (what tests/bindings/compare_llm.sh compares across languages). */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tinygrad.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static int fail(const char* what) {
  fprintf(stderr, "llm: %s: %s\n", what, tg_last_error_message());
  return 1;
}

typedef struct {
  double t_first, t_last;
  int64_t n;
  int64_t* ids; /* room for every token asked for */
} stream;

/* each token's text as it comes; the first arrives after the prompt and one sample */
static int on_token(void* userdata, int64_t token, const char* piece) {
  stream* s = (stream*)userdata;
  s->ids[s->n] = token;
  fputs(piece, stdout);
  fflush(stdout);
  s->t_last = now();
  if (s->n++ == 0) s->t_first = s->t_last;
  return 0;
}

int main(int argc, char** argv) {
  const char *model = NULL, *prompt = NULL;
  int64_t n = 128, ctx = 2048;
  int print_ids = 0;
  tg_llm_sampling s;
  s.struct_size = sizeof s;
  tg_llm_sampling_default(&s);
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (!strcmp(a, "--ids")) {
      print_ids = 1;
      continue;
    }
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return fprintf(stderr, "llm: %s needs a value\n", a), 2;
    if (!strcmp(a, "--model") || !strcmp(a, "-m")) model = v;
    else if (!strcmp(a, "--prompt") || !strcmp(a, "-p")) prompt = v;
    else if (!strcmp(a, "-n")) n = atoll(v);
    else if (!strcmp(a, "--temp")) s.temperature = atof(v);
    else if (!strcmp(a, "--top-k")) s.top_k = atoll(v);
    else if (!strcmp(a, "--top-p")) s.top_p = atof(v);
    else if (!strcmp(a, "--repeat-penalty")) s.repeat_penalty = atof(v);
    else if (!strcmp(a, "--seed")) s.seed = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--ctx")) ctx = atoll(v);
    else return fprintf(stderr, "llm: unknown option %s\n", a), 2;
    i++;
  }
  if (!model || !prompt) {
    fprintf(stderr, "usage: llm --model M.gguf --prompt \"...\" [-n 128] [--temp T] [--top-k K] [--top-p P] [--repeat-penalty R] [--seed S] [--ctx N] [--ids]\n");
    return 2;
  }
  if (n < 0 || n > (1 << 24)) return fprintf(stderr, "llm: -n %lld is outside 0..%d\n", (long long)n, 1 << 24), 2;
  tg_llm_options o = {sizeof o, NULL, ctx};
  double t0 = now();
  tg_llm* m = tg_llm_load(model, &o);
  if (!m) return fail("load");
  double t_load = now() - t0;
  tg_tensor* ids = tg_llm_tokenize(m, prompt, 1, 0);
  if (!ids) return fail("tokenize");
  int64_t n_prompt = tg_tensor_numel(ids);
  fputs(prompt, stdout);
  stream st = {0, 0, 0, malloc(sizeof(int64_t) * (size_t)(n ? n : 1))};
  if (!st.ids) return fprintf(stderr, "llm: out of memory\n"), 1;
  double t1 = now();
  int64_t got = tg_llm_generate(m, ids, n, &s, on_token, &st);
  if (got < 0) return fail("generate");
  double t_prompt = (st.n ? st.t_first : now()) - t1;
  printf("\n\nllm: loaded in %.2f s; prompt %lld tokens in %.3f s (%.1f tokens/s)", t_load, (long long)n_prompt, t_prompt, (double)n_prompt / t_prompt);
  if (st.n > 1) printf("; generated %lld tokens at %.2f tokens/s", (long long)st.n, (double)(st.n - 1) / (st.t_last - st.t_first));
  printf("\n");
  if (print_ids) {
    int32_t* p = malloc(sizeof(int32_t) * (size_t)(n_prompt ? n_prompt : 1)); /* tg_llm_tokenize gives int32 */
    if (!p || tg_tensor_to_data(ids, p, sizeof(int32_t) * (size_t)n_prompt) != TG_OK) return fail("prompt ids");
    printf("prompt:");
    for (int64_t i = 0; i < n_prompt; i++) printf(" %d", p[i]);
    printf("\ntokens:");
    for (int64_t i = 0; i < st.n; i++) printf(" %lld", (long long)st.ids[i]);
    printf("\n");
    free(p);
  }
  free(st.ids);
  tg_tensor_release(ids);
  tg_llm_release(m);
  return 0;
}
