// Tokenizers of GGUF language models (tokenizer.h). The algorithms, and the corners where they differ from a textbook
// BPE, follow llama.cpp (src/llama-vocab.cpp and src/unicode.cpp), which tests/python/test_llm_tokenizer.py runs side by
// side with these on a corpus. The pre-tokenizer regexes are scanners over codepoints, written out by hand; the Unicode
// classes they test come from a table generated from Python's unicodedata (unicode_data.inc).
#include "nn/tokenizer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cmath>
#include <queue>

#include "helpers.h"

namespace tg::nn {
namespace {

// ---- Unicode ----
enum UClass : uint8_t { U, L, N, Z, M, P, S, C };
struct UnicodeRun {
  uint32_t first;
  UClass cls;
};
#include "nn/unicode_data.inc"

// what the regexes test of a codepoint; ANY marks a codepoint of the text at all, so 0 is "past the chunk's end"
enum : uint8_t { LETTER = 1, NUMBER = 2, SPACE = 4, PUNCT = 8, ANY = 16 };
uint8_t classify(uint32_t cp) {
  auto run = std::upper_bound(std::begin(kUnicodeRuns), std::end(kUnicodeRuns), cp, [](uint32_t c, const UnicodeRun& r) { return c < r.first; }) - 1;
  uint8_t f = ANY | (run->cls == L ? LETTER : 0) | (run->cls == N ? NUMBER : 0) | (run->cls == P ? PUNCT : 0);
  return f | (std::binary_search(std::begin(kWhitespace), std::end(kWhitespace), cp) ? SPACE : 0);
}
uint8_t flags(uint32_t cp) {
  static const auto ascii = [] {
    std::array<uint8_t, 128> t{};
    for (uint32_t c = 0; c < 128; c++) t[c] = classify(c);
    return t;
  }();
  return cp < 128 ? ascii[cp] : classify(cp);
}

// The codepoints of `s` as llama.cpp's unicode_cpts_from_utf8 reads them: a bad lead or continuation byte is U+FFFD for
// that one byte, while overlong forms and surrogates pass (llama.cpp checks only the bit patterns). Above U+10FFFF is
// U+FFFD too (llama.cpp throws when it encodes one back).
std::vector<uint32_t> codepoints(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  for (size_t i = 0, n = s.size(); i < n;) {
    uint8_t b = p[i];
    size_t len = b < 0x80 ? 1 : !(b & 0x40) ? 0 : !(b & 0x20) ? 2 : !(b & 0x10) ? 3 : !(b & 0x08) ? 4 : 0;
    uint32_t cp = b & (len == 1 ? 0x7f : 0xff >> (len + 1));
    bool ok = len > 0 && len <= n - i;
    for (size_t k = 1; ok && k < len; k++) {
      ok = (p[i + k] & 0xc0) == 0x80;
      cp = cp << 6 | (p[i + k] & 0x3f);
    }
    ok = ok && cp <= 0x10FFFF;
    out.push_back(ok ? cp : 0xFFFD);
    i += ok ? len : 1;
  }
  return out;
}
void append_utf8(std::string& s, uint32_t cp) {
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xc0 | cp >> 6), s += char(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    s += char(0xe0 | cp >> 12), s += char(0x80 | (cp >> 6 & 0x3f)), s += char(0x80 | (cp & 0x3f));
  } else {
    s += char(0xf0 | cp >> 18), s += char(0x80 | (cp >> 12 & 0x3f)), s += char(0x80 | (cp >> 6 & 0x3f)), s += char(0x80 | (cp & 0x3f));
  }
}
// bytes of a UTF-8 sequence by its lead byte (1 for a stray continuation byte): SentencePiece's symbols
size_t utf8_len(uint8_t b) { return "\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4"[b >> 4]; }

// GPT-2's byte-level alphabet: byte b stands as codepoint b where that prints, else as 256, 257, ... in byte order
struct ByteAlphabet {
  int16_t byte[324];  // codepoint -> byte, -1 outside the alphabet
  ByteAlphabet() {
    std::fill(std::begin(byte), std::end(byte), int16_t(-1));
    for (uint32_t b = 0, n = 0; b < 256; b++) byte[(b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae ? b : 256 + n++] = int16_t(b);
  }
};
const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}
// A byte-level token's text mapped back to bytes; false if it holds a codepoint outside the alphabet
bool from_byte_level(std::string_view text, std::string& raw) {
  raw.clear();
  for (uint32_t cp : codepoints(text)) {
    if (cp >= 324 || alphabet().byte[cp] < 0) return false;
    raw += char(alphabet().byte[cp]);
  }
  return true;
}

// ---- pre-tokenizer regexes: each splits every chunk (a run of codepoints, lengths in `in`) into pieces ----
using Chunks = std::vector<size_t>;
struct Text {
  const std::vector<uint32_t>& cp;
  const std::vector<uint8_t>& fl;
};
// Runs scan(ini, end, emit) over each chunk [ini, end); emit(e) ends a piece at e (an empty piece is dropped), and what the
// scanner leaves at the chunk's end is one more piece: the unmatched text between a regex's matches is a piece too
template <class F>
Chunks each_chunk(const Chunks& in, F scan) {
  Chunks out;
  out.reserve(in.size());
  size_t ini = 0;
  for (size_t len : in) {
    size_t prev = ini;
    auto emit = [&](size_t e) {
      if (e > prev) out.push_back(e - prev);
      prev = e;
    };
    scan(ini, ini + len, emit);
    emit(ini + len);
    ini += len;
  }
  return out;
}
bool other(uint8_t f) { return (f & ANY) && !(f & (SPACE | LETTER | NUMBER)); }  // [^\s\p{L}\p{N}]
// 's|'t|'re|'ve|'m|'ll|'d at `pos` (a '): its length, 0 for none. `fold`: either case, llama3's (?i:...), for which
// ASCII is enough: no other codepoint lowercases to one of these letters (Unicode 15.1)
size_t contraction(const Text& t, size_t pos, size_t end, bool fold) {
  auto c = [&](size_t i) { return fold && t.cp[i] >= 'A' && t.cp[i] <= 'Z' ? t.cp[i] | 0x20 : t.cp[i]; };
  if (pos + 1 >= end) return 0;
  uint32_t a = c(pos + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (pos + 2 >= end) return 0;
  uint32_t b = c(pos + 2);
  return (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') ? 3 : 0;
}
// \s+(?!\S)|\s+ at `pos`, after llama3's \s*[\r\n]+: the end of the match, pos when there is none
size_t spaces(const Text& t, size_t pos, size_t end, bool newlines) {
  size_t n = 0, last_nl = 0;
  for (; pos + n < end && (t.fl[pos + n] & SPACE); n++)
    if (t.cp[pos + n] == '\r' || t.cp[pos + n] == '\n') last_nl = pos + n + 1;
  if (newlines && last_nl) return last_nl;  // \s*[\r\n]+
  return n > 1 && pos + n < end ? pos + n - 1 : pos + n;  // a run before a non-space leaves its last space to that word
}

// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
Chunks split_gpt2(const Text& t, const Chunks& in) {
  return each_chunk(in, [&](size_t ini, size_t end, auto& emit) {
    auto f = [&](size_t i) { return i < end ? t.fl[i] : uint8_t(0); };
    for (size_t pos = ini; pos < end;) {
      if (size_t k = t.cp[pos] == '\'' ? contraction(t, pos, end, false) : 0) {
        emit(pos += k);
        continue;
      }
      bool sp = t.cp[pos] == ' ';
      uint8_t f2 = f(pos + sp);
      size_t p = pos + sp;
      if (f2 & LETTER) {
        while (f(p) & LETTER) p++;
      } else if (f2 & NUMBER) {
        while (f(p) & NUMBER) p++;
      } else if (other(f2)) {
        while (other(f(p))) p++;
      } else {
        p = spaces(t, pos, end, false);
        if (p == pos) p++;
      }
      emit(pos = p);
    }
  });
}

// Llama 3 (digits 3) and Qwen2 (digits 1):
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// (llama.cpp runs Qwen2's through std::regex, with [sS] for (?i:s): for that regex this scanner gives the same pieces)
Chunks split_llama3(const Text& t, const Chunks& in, size_t digits) {
  return each_chunk(in, [&](size_t ini, size_t end, auto& emit) {
    auto f = [&](size_t i) { return i < end ? t.fl[i] : uint8_t(0); };
    for (size_t pos = ini; pos < end;) {
      uint32_t c = t.cp[pos];
      uint8_t fc = t.fl[pos];
      if (size_t k = c == '\'' ? contraction(t, pos, end, true) : 0) {
        emit(pos += k);
        continue;
      }
      if (c != '\r' && c != '\n' && !(fc & NUMBER) && ((fc & LETTER) || (f(pos + 1) & LETTER))) {
        for (pos++; f(pos) & LETTER;) pos++;
        emit(pos);
        continue;
      }
      if (fc & NUMBER) {
        for (size_t run = pos; f(pos) & NUMBER;)
          if (++pos - run >= digits) emit(run = pos);
        emit(pos);
        continue;
      }
      uint8_t f2 = c == ' ' ? f(pos + 1) : fc;  // 0 past the end: a lone trailing space is a piece here
      if (!(f2 & (SPACE | LETTER | NUMBER))) {
        size_t p = pos + (c == ' ');
        while (other(f(p))) p++;
        while (p < end && (t.cp[p] == '\r' || t.cp[p] == '\n')) p++;
        emit(pos = p);
        continue;
      }
      size_t p = spaces(t, pos, end, true);
      emit(pos = p > pos ? p : pos + 1);
    }
  });
}

// [\p{P}\$\+<=>\^~\|]+ (runs of it, and the runs between, are pieces), \p{N}+ (likewise) and \p{N} (each number alone)
bool punct_or_op(const Text& t, size_t i) {
  uint32_t c = t.cp[i];
  return (t.fl[i] & PUNCT) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' || c == '|';
}
template <class Pred>
Chunks split_runs(const Chunks& in, Pred pred, bool singles) {
  return each_chunk(in, [&](size_t ini, size_t end, auto& emit) {
    for (size_t pos = ini; pos < end;) {
      bool m = pred(pos);
      size_t p = pos + 1;
      if (!(m && singles))
        while (p < end && pred(p) == m) p++;
      emit(pos = p);
    }
  });
}
// [0-9][0-9][0-9]: the leftmost three ASCII digits, again and again
Chunks split_digits3(const Text& t, const Chunks& in) {
  return each_chunk(in, [&](size_t ini, size_t end, auto& emit) {
    auto d = [&](size_t i) { return t.cp[i] >= '0' && t.cp[i] <= '9'; };
    for (size_t pos = ini; pos + 3 <= end;) {
      if (d(pos) && d(pos + 1) && d(pos + 2)) {
        emit(pos);
        emit(pos += 3);
      } else {
        pos++;
      }
    }
  });
}

}  // namespace

enum class Tokenizer::Split : uint8_t { Gpt2, Llama3, Qwen2, PunctRuns, NumberRuns, EachNumber, Digits3 };

namespace {
using Split = Tokenizer::Split;
// tokenizer.ggml.pre names -> llama.cpp's regexes for them, and its flags: clean_spaces (decode drops the space before
// punctuation and some contractions), ignore_merges (a word that is a token is that token), add_bos (the default)
struct PreTokenizer {
  std::vector<const char*> names;
  std::vector<Split> splits;
  bool clean_spaces, ignore_merges, add_bos;
};
const std::vector<PreTokenizer>& pre_tokenizers() {
  static const std::vector<PreTokenizer> t = {
      {{"default"}, {Split::PunctRuns, Split::Gpt2, Split::NumberRuns, Split::Digits3}, true, false, false},
      {{"gpt-2", "phi-2"}, {Split::Gpt2}, true, false, false},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral"}, {Split::Llama3}, true, true, true},
      {{"qwen2", "deepseek-r1-qwen"}, {Split::Qwen2}, false, false, false},
      {{"stablelm2", "megrez"}, {Split::Qwen2}, true, false, false},
      {{"smollm", "command-r"}, {Split::EachNumber, Split::Gpt2}, false, false, false},
      {{"starcoder", "refact", "codeshell", "exaone"}, {Split::EachNumber, Split::Gpt2}, true, false, false},
  };
  return t;
}

// tokens llama.cpp knows by their text (llama-vocab.cpp, "auto-detect special tokens by text"): end-of-generation ones,
// and the fill-in-the-middle kinds it looks for when their key is absent. It marks each one it finds as control.
const char* const kEogTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
                                 "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
                                 "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["};
struct FimKind {
  const char* keys[2];  // the key and its deprecated name
  std::vector<const char*> texts;
  bool eog;
};
const FimKind kFim[] = {
    {{"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"},
     {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}, false},
    {{"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"},
     {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}, false},
    {{"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"},
     {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}, false},
    {{"tokenizer.ggml.fim_pad_token_id", nullptr}, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}, true},
    {{"tokenizer.ggml.fim_rep_token_id", nullptr}, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}, true},
    {{"tokenizer.ggml.fim_sep_token_id", nullptr}, {"<|file_sep|>"}, true},
};

uint64_t pair_key(int32_t a, int32_t b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }

// llama_detokenize's clean_up_tokenization_spaces, three passes in place: " ?", " !", " .", " ," lose the space; a lone
// "'" between spaces loses both; " 's", " 'm", " 're", " 've" lose theirs
void clean_spaces(std::string& t) {
  size_t n = t.size(), k = n ? 1 : 0;
  for (size_t i = 1; i < n; i++) {
    char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) k--;
    t[k++] = x;
  }
  n = k, k = n ? 1 : 0;
  for (size_t i = 1; i < n; i++) {
    char x = t[i];
    if (x == '\'' && i + 1 < n && t[i - 1] == ' ' && t[i + 1] == ' ') {
      k--;
      t[++i] = '\0';  // as llama.cpp: the skipped space reads as '\0' to the next character's test
    }
    t[k++] = x;
  }
  n = k, k = n ? 1 : 0;
  for (size_t i = 1; i < n; i++) {
    char x = t[i];
    if (t[i - 1] == ' ' && x == '\'' && i + 1 < n) {
      char a = t[i + 1];
      if (a == 's' || a == 'm' || (i + 2 < n && (a == 'r' || a == 'v') && t[i + 2] == 'e')) k--;
    }
    t[k++] = x;
  }
  t.resize(k);
}

}  // namespace

Tokenizer::Tokenizer(const GGUFFile& f, const std::string& name) {
  auto bad = [&](tg_status code, const std::string& msg) { fail(code, name + ": tokenizer: " + msg); };
  auto typed = [&](const char* key, uint32_t type, uint32_t elem, const char* what) -> const GGUFValue* {
    const GGUFValue* v = f.value(key);
    if (v && (v->type != type || v->elem_type != elem)) bad(TG_ERROR_IO, strformat("%s is not %s", key, what));
    return v;
  };
  constexpr uint32_t kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kStr = 8, kArr = 9;

  const GGUFValue* model = typed("tokenizer.ggml.model", kStr, kStr, "a string");
  if (!model) bad(TG_ERROR_IO, "no tokenizer.ggml.model");
  const std::string& m = model->strs[0];
  if (m != "llama" && m != "gpt2")
    bad(TG_ERROR_UNSUPPORTED, "tokenizer.ggml.model '" + m + "' is not supported (llama and gpt2 are)");
  kind_ = m == "llama" ? Kind::SPM : Kind::BPE;
  bos_ = kind_ == Kind::SPM ? 1 : 11, eos_ = kind_ == Kind::SPM ? 2 : 11, unk_ = kind_ == Kind::SPM ? 0 : -1;
  add_bos_ = add_space_prefix_ = kind_ == Kind::SPM;
  if (kind_ == Kind::BPE) {
    const GGUFValue* pre = typed("tokenizer.ggml.pre", kStr, kStr, "a string");
    std::string p = pre ? pre->strs[0] : "default";  // llama.cpp's fallback, with a warning about the quality
    const PreTokenizer* pt = nullptr;
    for (auto& e : pre_tokenizers())
      for (const char* n : e.names)
        if (p == n) pt = &e;
    if (!pt) bad(TG_ERROR_UNSUPPORTED, "tokenizer.ggml.pre '" + p + "' is not supported");
    splits_ = pt->splits, clean_spaces_ = pt->clean_spaces, ignore_merges_ = pt->ignore_merges, add_bos_ = pt->add_bos;
  }

  // the vocab, its scores and types
  const GGUFValue* tokens = typed("tokenizer.ggml.tokens", kArr, kStr, "an array of strings");
  if (!tokens) bad(TG_ERROR_IO, "no tokenizer.ggml.tokens");
  size_t n = tokens->strs.size();
  if (n == 0 || n > size_t(INT32_MAX)) bad(TG_ERROR_IO, strformat("tokenizer.ggml.tokens has %zu tokens", n));
  const GGUFValue* scores = f.value("tokenizer.ggml.scores");
  if (scores && (scores->type != kArr || (scores->elem_type != kF32 && scores->elem_type != kI32)))
    bad(TG_ERROR_IO, "tokenizer.ggml.scores is not an array of float32 or int32");
  const GGUFValue* types = typed("tokenizer.ggml.token_type", kArr, kI32, "an array of int32");
  for (const GGUFValue* v : {scores, types})
    if (v && v->nums.size() != n)
      bad(TG_ERROR_IO, strformat("tokenizer.ggml.%s has %zu entries for %zu tokens", v == scores ? "scores" : "token_type", v->nums.size(), n));
  text_.resize(n), attr_.assign(n, NORMAL);
  std::vector<float> score(n, 0.f);
  ids_.reserve(n);
  for (size_t i = 0; i < n; i++) {
    // llama.cpp names an empty token this way (with a warning) rather than refusing the file
    text_[i] = tokens->strs[i].empty() ? "[EMPTY_" + std::to_string(i) + "]" : tokens->strs[i];
    if (!ids_.emplace(text_[i], int32_t(i)).second)
      bad(TG_ERROR_IO, strformat("tokenizer.ggml.tokens: '%s' is both token %d and token %zu", text_[i].c_str(), ids_[text_[i]], i));
    max_len_ = std::max(max_len_, text_[i].size());
    if (scores) {
      // a NaN would break the order the SentencePiece merges are taken in
      if (std::isnan(scores->nums[i])) bad(TG_ERROR_IO, strformat("tokenizer.ggml.scores[%zu] is NaN", i));
      score[i] = float(scores->nums[i]) + 0.f;  // + 0: -0 is 0, as comparisons see it
    }
    if (types) {
      static const uint16_t kAttr[7] = {0, NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE};
      double t = types->nums[i];
      attr_[i] = t >= 0 && t <= 6 ? kAttr[int(t)] : 0;
    }
  }

  // special tokens: a key naming an id outside the vocab leaves the default, which is dropped when it is outside too
  auto id_key = [&](const char* key, int32_t& id) {
    if (id >= int32_t(n)) id = -1;
    const GGUFValue* v = typed(key, kU32, kU32, "a uint32");
    if (v && v->nums[0] < double(n)) id = int32_t(v->nums[0]);
    else if (v) debug_log(1, "%s: tokenizer: %s = %.0f is outside the vocab of %zu; using %d\n", name.c_str(), key, v->nums[0], n, id);
    return v != nullptr;
  };
  auto bool_key = [&](const char* key, bool& b) {
    if (const GGUFValue* v = typed(key, kBool, kBool, "a bool")) b = v->nums[0] != 0;
  };
  int32_t eot = -1, eom = -1;
  id_key("tokenizer.ggml.bos_token_id", bos_), id_key("tokenizer.ggml.eos_token_id", eos_), id_key("tokenizer.ggml.unknown_token_id", unk_);
  id_key("tokenizer.ggml.eot_token_id", eot), id_key("tokenizer.ggml.eom_token_id", eom);
  for (const char* key : {"tokenizer.ggml.seperator_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.mask_token_id"}) {
    int32_t unused = -1;
    id_key(key, unused);  // not used here, but llama.cpp refuses a mistyped one
  }
  bool_key("tokenizer.ggml.add_bos_token", add_bos_), bool_key("tokenizer.ggml.add_eos_token", add_eos_);
  bool_key("tokenizer.ggml.add_space_prefix", add_space_prefix_);
  if (add_bos_ && bos_ < 0) bad(TG_ERROR_IO, "tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id is not set");
  if (add_eos_ && eos_ < 0) bad(TG_ERROR_IO, "tokenizer.ggml.add_eos_token is true, but tokenizer.ggml.eos_token_id is not set");

  order_.resize(n);
  for (size_t i = 0; i < n; i++) {  // the scores' order as unsigned integers' order
    uint32_t u = std::bit_cast<uint32_t>(score[i]);
    order_[i] = u >> 31 ? ~u : u | 0x80000000u;
  }

  // end of generation: the ids the keys name, the tokens known by text (marked control, as llama.cpp marks them), and
  // fill-in-the-middle pad/repo/separator tokens
  eog_.assign(n, false);
  for (int32_t id : {eos_, eot, eom})
    if (id >= 0) eog_[id] = true;
  for (const char* t : kEogTexts)  // (the EOT and EOM tokens llama.cpp finds by text are among these)
    if (int32_t id = find(t); id >= 0) eog_[id] = true, attr_[id] |= CONTROL;
  for (const FimKind& k : kFim) {
    int32_t id = -1;
    bool keyed = false;
    for (const char* key : k.keys)
      if (key) keyed = id_key(key, id) || keyed;
    if (!keyed)  // the first by id of the known texts (llama.cpp takes the first in its hash map's order)
      for (size_t i = 0; i < n && id < 0; i++)
        for (const char* t : k.texts)
          if (text_[i] == t) id = int32_t(i), attr_[i] |= CONTROL;
    if (k.eog && id >= 0) eog_[id] = true;
  }
  // gpt-oss's tokens that must print; o200k_harmony's and solar-open's <|end|> is not an end there
  for (const char* t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
    if (int32_t id = find(t); id >= 0) attr_[id] = USER_DEFINED;
  auto eog_text = [&](const char* t) {
    int32_t id = find(t);
    return id >= 0 && eog_[id] ? id : -1;
  };
  bool ret = eog_text("<|return|>") >= 0, call = eog_text("<|call|>") >= 0 || eog_text("<|calls|>") >= 0;
  if (int32_t end = eog_text("<|end|>"); end >= 0 && ((ret && call) || (call && eog_text("<|flush|>") >= 0)))
    eog_[end] = false, attr_[end] = USER_DEFINED;
  if (int32_t s = eog_text("</s>"); s >= 0 && eog_text("<|tool_response>") >= 0) eog_[s] = false, attr_[s] = NORMAL;

  // what each token decodes to, and the byte tokens
  std::fill(std::begin(byte_tok_), std::end(byte_tok_), -1);
  piece_.resize(n);
  for (size_t i = 0; i < n; i++) {
    const std::string& t = text_[i];
    uint16_t a = attr_[i];
    if (a & (UNKNOWN | CONTROL | USER_DEFINED)) {
      piece_[i] = t;
    } else if (a & NORMAL) {
      if (kind_ == Kind::SPM) {
        for (size_t j = 0; j < t.size(); j++)
          if (t.compare(j, 3, "\xE2\x96\x81") == 0) piece_[i] += ' ', j += 2;
          else piece_[i] += t[j];
      } else {
        std::string raw;  // a codepoint outside the byte-level alphabet decodes as llama.cpp's marker
        for (uint32_t cp : codepoints(t))
          if (cp < 324 && alphabet().byte[cp] >= 0) {
            piece_[i] += char(alphabet().byte[cp]);
          } else {
            append_utf8(raw, cp);
            piece_[i] += "[UNK_BYTE_0x";
            for (size_t j = 0; j < raw.size(); j++) piece_[i] += strformat("%02x", uint8_t(raw[j]));
            piece_[i] += t + "]";
            raw.clear();
          }
      }
    } else if (a & BYTE) {
      if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>' || !std::isxdigit(uint8_t(t[3])) || !std::isxdigit(uint8_t(t[4])))
        bad(TG_ERROR_IO, strformat("tokenizer.ggml.token_type: token %zu '%s' is a byte token but not <0xNN>", i, t.c_str()));
      piece_[i] = std::string(1, char(std::stoi(t.substr(3, 2), nullptr, 16)));
    }
  }
  for (int b = 0; b < 256; b++) {
    byte_tok_[b] = find(strformat("<0x%02X>", b));
    if (byte_tok_[b] < 0) byte_tok_[b] = find(std::string(1, char(b)));  // llama.cpp's fallback: the byte as a token
  }

  // special tokens are looked for in the text longest first; a table of the bytes they start with skips the rest
  for (size_t i = 0; i < n; i++)
    if (attr_[i] & (CONTROL | USER_DEFINED | UNKNOWN)) special_.push_back(int32_t(i));
  std::stable_sort(special_.begin(), special_.end(), [&](int32_t a, int32_t b) { return text_[a].size() > text_[b].size(); });
  trie_end_.push_back(-1);
  for (size_t si = 0; si < special_.size(); si++) {
    int32_t node = 0;
    first_byte_[uint8_t(text_[special_[si]][0])] = true;
    for (char c : text_[special_[si]]) {
      auto [it, added] = trie_.emplace(pair_key(node, uint8_t(c)), int32_t(trie_end_.size()));
      if (added) trie_end_.push_back(-1);
      node = it->second;
    }
    trie_end_[node] = int32_t(si);
  }

  if (kind_ == Kind::BPE) {
    const GGUFValue* merges = typed("tokenizer.ggml.merges", kArr, kStr, "an array of strings");
    if (!merges) bad(TG_ERROR_IO, "no tokenizer.ggml.merges");
    if (merges->strs.size() > size_t(INT32_MAX)) bad(TG_ERROR_IO, "tokenizer.ggml.merges has too many merges");
    merges_.reserve(merges->strs.size());
    for (size_t i = 0; i < merges->strs.size(); i++) {
      const std::string& s = merges->strs[i];
      size_t sp = s.empty() ? std::string::npos : s.find(' ', 1);
      if (sp == std::string::npos) bad(TG_ERROR_IO, strformat("tokenizer.ggml.merges[%zu] '%s' is not two tokens", i, s.c_str()));
      std::string a = s.substr(0, sp), b = s.substr(sp + 1);
      int32_t ia = find(a), ib = find(b), im = find(a + b);
      if (ia < 0 || ib < 0 || im < 0)
        bad(TG_ERROR_IO, strformat("tokenizer.ggml.merges[%zu] '%s': '%s' is not a token", i, s.c_str(), (ia < 0 ? a : ib < 0 ? b : a + b).c_str()));
      merges_.emplace(pair_key(ia, ib), Merge{int32_t(i), im});  // a repeated pair keeps its first rank, as llama.cpp's
    }
    std::string raw;
    for (size_t i = 0; i < n; i++)
      if (from_byte_level(text_[i], raw)) raw_ids_.emplace(raw, int32_t(i));
    for (int b = 0; b < 256; b++) {
      char c = char(b);
      auto it = raw_ids_.find(std::string_view(&c, 1));
      byte_sym_[b] = it == raw_ids_.end() ? -1 : it->second;
    }
  }
}

Tokenizer Tokenizer::load(const std::string& path) { return Tokenizer(gguf_parse(open_file(path, "tokenizer")), path); }

int32_t Tokenizer::find(std::string_view s) const {
  auto it = ids_.find(s);
  return it == ids_.end() ? -1 : it->second;
}
int32_t Tokenizer::check(int32_t token) const {
  TG_CHECK(token >= 0 && token < n_vocab(), TG_ERROR_INVALID_ARGUMENT, strformat("tokenizer: token %d is outside the vocab of %d", token, n_vocab()));
  return token;
}
const std::string& Tokenizer::text(int32_t token) const { return text_[check(token)]; }
uint16_t Tokenizer::attr(int32_t token) const { return attr_[check(token)]; }
bool Tokenizer::is_eog(int32_t token) const { return token >= 0 && token < n_vocab() && eog_[token]; }

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  // symbols are indexed by int32 (as llama.cpp's are) and token counts are int32 at the C API
  TG_CHECK(text.size() < (size_t(1) << 31), TG_ERROR_INVALID_ARGUMENT, strformat("tokenizer: a text of %zu bytes is over 2 GiB", text.size()));
  // the text as pieces of text and special tokens (llama.cpp's tokenizer_st_partition): each special token in turn,
  // longest first, splits every text piece where its text occurs. Only those that occur at all are run: one pass over
  // the text with the table of their texts finds them.
  struct Frag {
    int32_t tok;  // -1: text [off, off + len)
    size_t off, len;
  };
  std::vector<Frag> frags;
  if (!text.empty()) frags.push_back({-1, 0, text.size()});
  std::vector<bool> present(special_.size(), false);
  for (size_t i = 0; i < text.size(); i++) {
    if (!first_byte_[uint8_t(text[i])]) continue;
    for (size_t j = i, node = 0; j < text.size();) {
      auto it = trie_.find(pair_key(int32_t(node), uint8_t(text[j++])));
      if (it == trie_.end()) break;
      node = size_t(it->second);
      if (trie_end_[node] >= 0) present[size_t(trie_end_[node])] = true;
    }
  }
  for (size_t si = 0; si < special_.size(); si++) {
    int32_t t = special_[si];
    if (!present[si] || (!parse_special && (attr_[t] & (CONTROL | UNKNOWN)))) continue;  // user-defined ones always split
    const std::string& s = text_[t];
    std::vector<Frag> next;
    next.reserve(frags.size() + 2);
    for (const Frag& fr : frags) {
      size_t off = fr.off, end = fr.off + fr.len;
      for (size_t m; fr.tok < 0 && (m = text.substr(0, end).find(s, off)) != std::string_view::npos; off = m + s.size()) {
        if (m > off) next.push_back({-1, off, m - off});
        next.push_back({t, m, s.size()});
      }
      if (fr.tok >= 0) next.push_back(fr);
      else if (off < end) next.push_back({-1, off, end - off});
    }
    frags.swap(next);
  }

  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 2);
  if (add_special && add_bos_) out.push_back(bos_);
  bool after_special = true;  // SentencePiece puts a space before text that starts the input or follows a special token
  for (const Frag& fr : frags) {
    if (fr.tok >= 0) {
      out.push_back(fr.tok);
      after_special = true;
      continue;
    }
    std::string_view piece = text.substr(fr.off, fr.len);
    if (kind_ == Kind::BPE) {
      bpe_encode(piece, out);
    } else {
      std::string s = add_space_prefix_ && after_special ? "\xE2\x96\x81" : "";
      for (char c : piece) s += c == ' ' ? std::string_view("\xE2\x96\x81") : std::string_view(&c, 1);
      spm_encode(s, out);
    }
    after_special = false;
  }
  if (add_special && add_eos_) out.push_back(eos_);
  return out;
}

// SentencePiece (llama.cpp's llm_tokenizer_spm_session): UTF-8 characters merged, the adjacent pair whose concatenation
// is the best-scored token first (the leftmost among equals), until no pair is a token; what is left that is no token
// is its bytes as byte tokens
void Tokenizer::spm_encode(std::string_view s, std::vector<int32_t>& out) const {
  struct Sym {
    uint32_t start, n;
    int32_t prev, next;
  };
  std::vector<Sym> sym;
  sym.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t len = uint32_t(std::min(utf8_len(uint8_t(s[i])), s.size() - i));
    sym.push_back({uint32_t(i), len, int32_t(sym.size()) - 1, i + len == s.size() ? -1 : int32_t(sym.size()) + 1});
    i += len;
  }
  // candidates as (score order, inverted) << 32 | left, so the smallest is the next merge: the best score, then the
  // leftmost. A candidate is stale once either side has merged; then the pair at `left` is another, and when that one's
  // score is the same it has been pushed with the same key, so taking either is the same merge.
  auto token_at = [&](int32_t l) {
    int32_t r = l >= 0 && sym[l].n ? sym[l].next : -1;
    if (r < 0 || sym[l].n + sym[r].n > max_len_) return -1;
    return find(s.substr(sym[l].start, sym[l].n + sym[r].n));
  };
  auto key = [&](int32_t id, int32_t l) { return uint64_t(~order_[id]) << 32 | uint32_t(l); };
  std::vector<uint64_t> heap;
  heap.reserve(sym.size());
  auto add = [&](int32_t l) {
    if (int32_t id = token_at(l); id >= 0) heap.push_back(key(id, l)), std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (int32_t i = 0; i + 1 < int32_t(sym.size()); i++) add(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    uint64_t c = heap.back();
    heap.pop_back();
    int32_t left = int32_t(c & 0xffffffffu), id = token_at(left);
    if (id < 0 || key(id, left) != c) continue;
    Sym &l = sym[left], &r = sym[l.next];
    l.n += r.n, r.n = 0, l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = left;
    add(l.prev), add(left);
  }
  for (int32_t i = sym.empty() ? -1 : 0; i >= 0; i = sym[i].next) {
    std::string_view t = s.substr(sym[i].start, sym[i].n);
    if (int32_t id = find(t); id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char b : t)  // llama.cpp throws for a byte with no token; unknown is the closest it has
      if (int32_t id = byte_tok_[uint8_t(b)] >= 0 ? byte_tok_[uint8_t(b)] : unk_; id >= 0) out.push_back(id);
  }
}

// byte-level BPE (llama.cpp's llm_tokenizer_bpe_session): the text split by the pre-tokenizer, each word's bytes merged
// by rank. Words are rebuilt from the codepoints, so an invalid byte becomes U+FFFD's three bytes, as in llama.cpp.
void Tokenizer::bpe_encode(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<uint32_t> cp = codepoints(text);
  std::vector<uint8_t> fl(cp.size());
  for (size_t i = 0; i < cp.size(); i++) fl[i] = flags(cp[i]);
  Text t{cp, fl};
  Chunks chunks{cp.size()};
  for (Split s : splits_) {
    switch (s) {
      case Split::Gpt2: chunks = split_gpt2(t, chunks); break;
      case Split::Llama3: chunks = split_llama3(t, chunks, 3); break;
      case Split::Qwen2: chunks = split_llama3(t, chunks, 1); break;
      case Split::PunctRuns: chunks = split_runs(chunks, [&](size_t i) { return punct_or_op(t, i); }, false); break;
      case Split::NumberRuns: chunks = split_runs(chunks, [&](size_t i) { return (fl[i] & NUMBER) != 0; }, false); break;
      case Split::EachNumber: chunks = split_runs(chunks, [&](size_t i) { return (fl[i] & NUMBER) != 0; }, true); break;
      case Split::Digits3: chunks = split_digits3(t, chunks); break;
    }
  }
  std::string word;
  size_t start = 0;
  for (size_t len : chunks) {
    word.clear();
    for (size_t i = start; i < start + len; i++) append_utf8(word, cp[i]);
    start += len;
    bpe_word(word, out);
  }
}

void Tokenizer::bpe_word(std::string_view w, std::vector<int32_t>& out) const {
  if (ignore_merges_)
    if (auto it = raw_ids_.find(w); it != raw_ids_.end()) return out.push_back(it->second);
  struct Sym {
    int32_t id, prev, next;  // id -1: a byte the vocab lacks, which llama.cpp drops; -2: merged into its left
  };
  int32_t n = int32_t(w.size());
  std::vector<Sym> sym(w.size());
  for (int32_t i = 0; i < n; i++) sym[i] = {byte_sym_[uint8_t(w[i])], i - 1, i + 1 < n ? i + 1 : -1};
  // candidates as rank << 32 | left, so the smallest is the next merge (the leftmost among equal ranks). A candidate is
  // stale once either side has merged: then the pair at `left` is another pair, with another rank (ranks are unique).
  std::vector<uint64_t> heap;
  heap.reserve(size_t(n));
  auto rank_at = [&](int32_t l) -> const Merge* {
    int32_t r = l >= 0 ? sym[l].next : -1;
    if (r < 0 || sym[l].id < 0 || sym[r].id < 0) return nullptr;
    auto it = merges_.find(pair_key(sym[l].id, sym[r].id));
    return it == merges_.end() ? nullptr : &it->second;
  };
  auto add = [&](int32_t l) {
    if (const Merge* m = rank_at(l)) {
      heap.push_back(uint64_t(m->rank) << 32 | uint32_t(l));
      std::push_heap(heap.begin(), heap.end(), std::greater<>());
    }
  };
  for (int32_t i = 0; i + 1 < n; i++) add(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    uint64_t c = heap.back();
    heap.pop_back();
    int32_t left = int32_t(c & 0xffffffffu);
    const Merge* m = sym[left].id >= 0 ? rank_at(left) : nullptr;
    if (!m || uint64_t(m->rank) != c >> 32) continue;
    Sym &l = sym[left], &r = sym[l.next];
    l.id = m->id, r.id = -2, l.next = r.next;
    if (r.next >= 0) sym[r.next].prev = left;
    add(l.prev), add(left);
  }
  for (int32_t i = n ? 0 : -1; i >= 0; i = sym[i].next)
    if (sym[i].id >= 0) out.push_back(sym[i].id);
}

std::string Tokenizer::decode(int32_t token, bool special) const {
  check(token);
  return !special && (attr_[token] & (UNKNOWN | CONTROL)) ? std::string() : piece_[token];
}

std::string Tokenizer::decode(const std::vector<int32_t>& tokens, bool remove_special, bool unparse_special) const {
  for (int32_t t : tokens) check(t);
  size_t b = 0, e = tokens.size();
  bool strip = add_space_prefix_;  // the space encode put before the text
  if (remove_special && add_bos_ && e > 0 && tokens[0] == bos_) b++, strip = false;
  if (remove_special && add_eos_ && e > b && tokens[e - 1] == eos_) e--;
  std::string out;
  for (size_t i = b; i < e; i++) {
    std::string_view p = !unparse_special && (attr_[tokens[i]] & (UNKNOWN | CONTROL)) ? std::string_view() : piece_[tokens[i]];
    if (strip && !p.empty() && p[0] == ' ') p.remove_prefix(1);
    strip = false;
    out += p;
  }
  if (clean_spaces_) clean_spaces(out);
  return out;
}

}  // namespace tg::nn
