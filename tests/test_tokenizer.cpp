// nn::Tokenizer on small vocabularies built here, whose right answers can be worked out by hand: SentencePiece merges
// by score and byte fallback, byte-level BPE merges by rank, the pre-tokenizer regexes, special tokens, decoding; and
// hostile metadata, each an error naming the key, never a crash. tests/python/test_llm_tokenizer.py compares the same
// code with llama.cpp on a corpus.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "helpers.h"
#include "nn/state.h"
#include "nn/tokenizer.h"

using namespace tg;
using namespace tg::nn;

namespace {

constexpr uint32_t kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7, kStr = 8, kArr = 9;
GGUFValue str(const std::string& s) { return {kStr, kStr, {s}, {}}; }
GGUFValue u32(double v) { return {kU32, kU32, {}, {v}}; }
GGUFValue boolean(bool b) { return {kBool, kBool, {}, {double(b)}}; }
GGUFValue strs(std::vector<std::string> v) { return {kArr, kStr, std::move(v), {}}; }
GGUFValue nums(uint32_t elem, std::vector<double> v) { return {kArr, elem, {}, std::move(v)}; }

const std::string SP = "\xE2\x96\x81";  // U+2581, SentencePiece's space
enum : int { NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER = 4, BYTE = 6 };

// <unk> <s> </s>, the 256 byte tokens, then pieces for "hello world" (every prefix of "▁hello" and "▁world", longer
// ones scored higher), and a user-defined token
struct Spm {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<double> scores = {0, 0, 0};
  std::vector<double> types = {UNKNOWN, CONTROL, CONTROL};
  Spm() {
    for (int b = 0; b < 256; b++) add(strformat("<0x%02X>", b), 0, BYTE);
    for (const char* w : {"hello", "world"})
      for (size_t n = 1; n <= 5; n++) add(SP + std::string(w, n), double(n), NORMAL);
    for (const char* p : {"h", "e", "l", "o", "w", "r", "d", "ll", "he"}) add(p, -10, NORMAL);
    add(SP, -5, NORMAL), add("<tool>", 0, USER);
  }
  void add(const std::string& t, double s, int type) { tokens.push_back(t), scores.push_back(s), types.push_back(type); }
  int id(const std::string& t) const { return int(std::find(tokens.begin(), tokens.end(), t) - tokens.begin()); }
  GGUFFile file() const {
    GGUFFile f;
    f.values = {{"tokenizer.ggml.model", str("llama")}, {"tokenizer.ggml.tokens", strs(tokens)}, {"tokenizer.ggml.scores", nums(kF32, scores)},
                {"tokenizer.ggml.token_type", nums(kI32, types)}};
    return f;
  }
};

// GPT-2's byte-level alphabet: byte b as codepoint b where that prints, else 256, 257, ... in byte order
std::string byte_char(int b) {
  int n = 0;
  for (int c = 0; c < b; c++) n += !((c >= 0x21 && c <= 0x7e) || (c >= 0xa1 && c <= 0xac) || c >= 0xae);
  int cp = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae ? b : 256 + n;
  std::string s;
  if (cp < 0x80) s += char(cp);
  else s += char(0xc0 | cp >> 6), s += char(0x80 | (cp & 0x3f));
  return s;
}
// the 256 byte tokens, then tokens and merges for "hello" and " world", and special tokens
struct Bpe {
  std::vector<std::string> tokens, merges = {"h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld"};
  std::vector<double> types;
  std::string pre = "gpt-2";
  Bpe() {
    for (int b = 0; b < 256; b++) tokens.push_back(byte_char(b)), types.push_back(NORMAL);
    for (const char* t : {"he", "ll", "hell", "hello", "Ġw", "or", "Ġwor", "ld", "Ġworld"}) tokens.push_back(t), types.push_back(NORMAL);
    tokens.push_back("<|begin_of_text|>"), types.push_back(CONTROL);
    tokens.push_back("<|eot_id|>"), types.push_back(CONTROL);
    tokens.push_back("<tool>"), types.push_back(USER);
  }
  int id(const std::string& t) const { return int(std::find(tokens.begin(), tokens.end(), t) - tokens.begin()); }
  GGUFFile file() const {
    GGUFFile f;
    f.values = {{"tokenizer.ggml.model", str("gpt2")}, {"tokenizer.ggml.pre", str(pre)}, {"tokenizer.ggml.tokens", strs(tokens)},
                {"tokenizer.ggml.token_type", nums(kI32, types)}, {"tokenizer.ggml.merges", strs(merges)},
                {"tokenizer.ggml.bos_token_id", u32(id("<|begin_of_text|>"))}, {"tokenizer.ggml.eos_token_id", u32(id("<|eot_id|>"))}};
    return f;
  }
};

// runs `f`, which should throw a tg::Error of `code` whose message holds every one of `needles`
#define expect_error(...)   \
  do {                      \
    SCOPED_TRACE("here");   \
    expect_error_(__VA_ARGS__); \
  } while (0)
template <class F>
void expect_error_(F f, tg_status code, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no error; wanted one naming " << needles[0];
  } catch (const Error& e) {
    EXPECT_EQ(e.code, code) << e.what();
    for (auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "wanted '" << n << "' in: " << e.what();
  }
}

// GGUF bytes: key/values serialized as given, no tensors
struct GgufBytes {
  std::vector<uint8_t> kv;
  uint64_t n = 0;
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    kv.insert(kv.end(), p, p + sizeof(T));
  }
  void put_str(const std::string& s) { put<uint64_t>(s.size()), kv.insert(kv.end(), s.begin(), s.end()); }
  GgufBytes& string(const std::string& k, const std::string& v) { return put_str(k), put<uint32_t>(kStr), put_str(v), n++, *this; }
  GgufBytes& string_array(const std::string& k, const std::vector<std::string>& v, uint64_t count = ~0ull) {
    put_str(k), put<uint32_t>(kArr), put<uint32_t>(kStr), put<uint64_t>(count == ~0ull ? v.size() : count);
    for (auto& s : v) put_str(s);
    return n++, *this;
  }
  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> b = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
    for (uint64_t x : {uint64_t(0), n})
      for (int i = 0; i < 8; i++) b.push_back(uint8_t(x >> (8 * i)));
    b.insert(b.end(), kv.begin(), kv.end());
    return b;
  }
};
GGUFFile parse(const std::vector<uint8_t>& b) { return gguf_parse(Bytes{b.data(), b.size(), "vocab.gguf"}); }

}  // namespace

TEST(Tokenizer, SentencePieceMergesByScoreWithByteFallback) {
  Spm v;
  Tokenizer t(v.file());
  EXPECT_EQ(t.kind(), Tokenizer::Kind::SPM);
  EXPECT_EQ(t.n_vocab(), int(v.tokens.size()));
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.eos(), 2);
  EXPECT_TRUE(t.add_bos());
  EXPECT_FALSE(t.add_eos());
  int hello = v.id(SP + "hello"), world = v.id(SP + "world");
  // a space goes before the text, every space is U+2581
  EXPECT_EQ(t.encode("hello world", false, false), (std::vector<int32_t>{hello, world}));
  EXPECT_EQ(t.encode("hello world", true, false), (std::vector<int32_t>{1, hello, world}));
  // é is no piece: its two bytes as byte tokens (3 + byte)
  EXPECT_EQ(t.encode("hé", false, false), (std::vector<int32_t>{v.id(SP + "h"), 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(t.encode("", false, false), std::vector<int32_t>{});
  EXPECT_EQ(t.encode("", true, false), std::vector<int32_t>{1});
  // decode: the leading space encode added goes; byte tokens join into UTF-8
  EXPECT_EQ(t.decode(t.encode("hé hello", false, false)), "hé hello");
  // llama.cpp's quirk: a first token that is BOS, dropped or not, keeps the space on the next
  EXPECT_EQ(t.decode(std::vector<int32_t>{1, hello, world}, true), " hello world");
  EXPECT_EQ(t.decode(std::vector<int32_t>{1, hello, world}, false), " hello world");
  EXPECT_EQ(t.decode(std::vector<int32_t>{hello, world}), "hello world");
  EXPECT_EQ(t.decode(1), "");
  EXPECT_EQ(t.decode(1, true), "<s>");
  EXPECT_EQ(t.decode(3 + 'A'), "A");
  EXPECT_TRUE(t.is_eog(2));
  EXPECT_FALSE(t.is_eog(1));
  EXPECT_FALSE(t.is_eog(-1));
  EXPECT_FALSE(t.is_eog(1 << 30));
}

// The flags a GGUF can set: no space before the text, an EOS after it
TEST(Tokenizer, SentencePieceFlags) {
  Spm v;
  GGUFFile f = v.file();
  f.values["tokenizer.ggml.add_space_prefix"] = boolean(false), f.values["tokenizer.ggml.add_eos_token"] = boolean(true);
  Tokenizer t(f);
  EXPECT_TRUE(t.add_eos());
  EXPECT_EQ(t.encode("hello world", true, false), (std::vector<int32_t>{1, v.id("he"), v.id("ll"), v.id("o"), v.id(SP + "world"), 2}));
  EXPECT_EQ(t.decode(t.encode("hello world", true, false), true), "hello world");
  EXPECT_EQ(t.decode(t.encode(" hi", false, false)), " hi");  // no space to strip but the text's own
}

TEST(Tokenizer, SpecialTokensInText) {
  Spm v;
  Tokenizer t(v.file());
  int tool = v.id("<tool>"), hello = v.id(SP + "hello");
  // control tokens only with parse_special; user-defined ones always; text after a special token gets the space again
  EXPECT_EQ(t.encode("<s>hello", false, true), (std::vector<int32_t>{1, hello}));
  std::vector<int32_t> plain = t.encode("<s>hello", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 1), 0);
  EXPECT_EQ(t.encode("<tool>hello", false, false), (std::vector<int32_t>{tool, hello}));
  EXPECT_EQ(t.decode(t.encode("<tool>hello</s>", false, true), false, true), "<tool> hello</s>");
  Bpe b;
  Tokenizer bt(b.file());
  int eot = b.id("<|eot_id|>");
  EXPECT_EQ(bt.encode("hello<|eot_id|>", false, true), (std::vector<int32_t>{b.id("hello"), eot}));
  EXPECT_EQ(bt.encode("<|eot_id|><|eot_id|>", false, true), (std::vector<int32_t>{eot, eot}));
  EXPECT_EQ(bt.encode("<|eot_id|>", false, false).size(), 10u);  // its bytes, one token each: no merges for them
  EXPECT_EQ(bt.encode("a<tool>b", false, false), (std::vector<int32_t>{b.id("a"), b.id("<tool>"), b.id("b")}));
  EXPECT_TRUE(bt.is_eog(eot));
}

TEST(Tokenizer, BytePairMergesByRank) {
  Bpe v;
  Tokenizer t(v.file());
  EXPECT_EQ(t.kind(), Tokenizer::Kind::BPE);
  EXPECT_FALSE(t.add_bos());  // gpt-2's default
  EXPECT_EQ(t.encode("hello world", false, false), (std::vector<int32_t>{v.id("hello"), v.id("Ġworld")}));
  EXPECT_EQ(t.encode("hello world", true, false), (std::vector<int32_t>{v.id("hello"), v.id("Ġworld")}));
  // "hellohello" is one word: each "hello" merges inside it, lowest rank first
  EXPECT_EQ(t.encode("hellohello", false, false), (std::vector<int32_t>{v.id("hello"), v.id("hello")}));
  // every byte has a token: any text, even invalid UTF-8 (a bad byte is U+FFFD's three bytes, as in llama.cpp)
  EXPECT_EQ(t.decode(t.encode("\xff", false, false)), "\xEF\xBF\xBD");
  EXPECT_EQ(t.decode(t.encode("é ü 中文 😀\t\r\n", false, false)), "é ü 中文 😀\t\r\n");
  // gpt-2's decode drops a space before . , ! ? as llama.cpp's does: not every text round-trips
  EXPECT_EQ(t.decode(t.encode("hello . world", false, false)), "hello. world");
  EXPECT_EQ(t.decode(v.id("Ġworld")), " world");
}

// Pre-tokenizers seen through ignore_merges (llama3): a word that is a token is that token, anything else its bytes
TEST(Tokenizer, PreTokenizerRegexes) {
  Bpe v;
  v.merges.clear();
  for (const char* w : {"Hello", "'s", "'S", "123", "Ġ123", "ĠĠ", "!!", "Ġ!!", "ĊĊ", "ĠĠĊ"}) v.tokens.push_back(w), v.types.push_back(NORMAL);
  auto enc = [&](const char* pre, const std::string& s) {
    v.pre = pre;
    return Tokenizer(v.file()).encode(s, false, false);
  };
  auto ids = [&](std::vector<std::string> ts) {
    std::vector<int32_t> out;
    for (auto& s : ts) out.push_back(v.id(s));
    return out;
  };
  // llama3: contractions of either case, numbers in threes, a space before a run of spaces stays with the next word
  EXPECT_EQ(enc("llama-bpe", "Hello world's 123456"), ids({"Hello", "Ġworld", "'s", "Ġ", "123", "4", "5", "6"}));
  EXPECT_EQ(enc("llama-bpe", "Hello'S"), ids({"Hello", "'S"}));
  EXPECT_EQ(enc("llama-bpe", "!!\n\n  \n"), ids({"!", "!", "Ċ", "Ċ", "ĠĠĊ"}));  // "!!\n\n" is one word, not a token: bytes
  EXPECT_EQ(enc("llama-bpe", "   world"), ids({"ĠĠ", "Ġworld"}));
  // qwen2: numbers one by one
  EXPECT_EQ(enc("qwen2", "x123"), ids({"x", "1", "2", "3"}));
  // gpt-2: no ignore_merges (bytes for everything here), ' ?\p{N}+' keeps a number whole
  EXPECT_EQ(enc("gpt-2", " 123").size(), 4u);
  // unknown pre-tokenizers are refused by name
  expect_error([&] { enc("no-such-pre", "x"); }, TG_ERROR_UNSUPPORTED, {"tokenizer.ggml.pre", "no-such-pre"});
}

TEST(Tokenizer, LoadsFromGgufBytesWithTypedArrays) {
  GgufBytes g;
  std::vector<std::string> toks = {"<unk>", "<s>", "</s>", SP + "a", "a", SP};
  g.string("tokenizer.ggml.model", "llama").string_array("tokenizer.ggml.tokens", toks);
  GGUFFile f = parse(g.bytes());
  ASSERT_NE(f.value("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(f.value("tokenizer.ggml.tokens")->strs, toks);
  EXPECT_EQ(f.value("tokenizer.ggml.tokens")->elem_type, kStr);
  EXPECT_EQ(f.value("tokenizer.ggml.model")->strs, std::vector<std::string>{"llama"});
  EXPECT_EQ(f.kv[1].json.substr(0, 9), "[\"<unk>\",");  // the JSON text is as before
  Tokenizer t(f, "vocab.gguf");
  EXPECT_EQ(t.encode("a a", false, false), (std::vector<int32_t>{3, 3}));
}

TEST(Tokenizer, HostileMetadataIsAnErrorNamingTheKey) {
  // a vocab's metadata with `edit` applied (V: the values by key, with "tokenizer.ggml." left off), loaded
  using Values = std::unordered_map<std::string, GGUFValue>;
  auto load = [](GGUFFile f, auto edit) {
    Values v;
    for (auto& [k, x] : f.values) v[k.substr(15)] = x;
    edit(v);
    f.values.clear();
    for (auto& [k, x] : v) f.values["tokenizer.ggml." + k] = x;
    Tokenizer t(f, "bad.gguf");
  };
  auto spm = [&](auto edit) { load(Spm().file(), edit); };
  auto bpe = [&](auto edit) { load(Bpe().file(), edit); };
  constexpr tg_status IO = TG_ERROR_IO;
  expect_error([&] { spm([](Values& V) { V.erase("model"); }); }, IO, {"bad.gguf", "tokenizer.ggml.model"});
  expect_error([&] { spm([](Values& V) { V["model"] = str("bert"); }); }, TG_ERROR_UNSUPPORTED, {"'bert'"});
  expect_error([&] { spm([](Values& V) { V["model"] = u32(1); }); }, IO, {"tokenizer.ggml.model", "string"});
  expect_error([&] { spm([](Values& V) { V.erase("tokens"); }); }, IO, {"tokenizer.ggml.tokens"});
  expect_error([&] { spm([](Values& V) { V["tokens"] = nums(kI32, {1, 2}); }); }, IO, {"tokenizer.ggml.tokens", "array of strings"});
  expect_error([&] { spm([](Values& V) { V["tokens"] = strs({}); }); }, IO, {"tokenizer.ggml.tokens", "0 tokens"});
  // arrays of other lengths than the vocab's, of other types, a NaN score, a token twice, a byte token that isn't one
  expect_error([&] { spm([](Values& V) { V["scores"].nums.pop_back(); }); }, IO, {"tokenizer.ggml.scores", "entries"});
  expect_error([&] { spm([](Values& V) { V["token_type"].nums.push_back(1); }); }, IO, {"tokenizer.ggml.token_type", "entries"});
  expect_error([&] { spm([](Values& V) { V["scores"] = strs({"x"}); }); }, IO, {"tokenizer.ggml.scores"});
  expect_error([&] { spm([](Values& V) { V["scores"].nums[7] = NAN; }); }, IO, {"tokenizer.ggml.scores[7]", "NaN"});
  expect_error([&] { spm([](Values& V) { V["tokens"].strs[262] = "<s>"; }); }, IO, {"tokenizer.ggml.tokens", "'<s>'"});
  expect_error([&] { spm([](Values& V) { V["tokens"].strs[3] = "<0xZZ>"; }); }, IO, {"token_type", "<0xZZ>"});
  // special ids: mistyped is an error; add_bos_token with no BOS token in range is one (llama.cpp's check)
  expect_error([&] { spm([](Values& V) { V["bos_token_id"] = str("1"); }); }, IO, {"tokenizer.ggml.bos_token_id", "uint32"});
  expect_error([&] { spm([](Values& V) { V["add_bos_token"] = u32(1); }); }, IO, {"tokenizer.ggml.add_bos_token", "bool"});
  auto one_token = [](Values& V) {
    V["tokens"].strs.resize(1), V["scores"].nums.resize(1), V["token_type"].nums.resize(1);
    V["bos_token_id"] = u32(1e9);
  };
  expect_error([&] { spm(one_token); }, IO, {"tokenizer.ggml.add_bos_token is true", "tokenizer.ggml.bos_token_id"});
  // merges: missing, not two tokens, naming a token the vocab lacks, or whose join it lacks
  expect_error([&] { bpe([](Values& V) { V.erase("merges"); }); }, IO, {"tokenizer.ggml.merges"});
  expect_error([&] { bpe([](Values& V) { V["merges"].strs.push_back("hello"); }); }, IO, {"tokenizer.ggml.merges[9]", "'hello'"});
  expect_error([&] { bpe([](Values& V) { V["merges"].strs.push_back(""); }); }, IO, {"tokenizer.ggml.merges[9]"});
  expect_error([&] { bpe([](Values& V) { V["merges"].strs.push_back("zz q"); }); }, IO, {"merges[9]", "'zz' is not a token"});
  expect_error([&] { bpe([](Values& V) { V["merges"].strs.push_back("w d"); }); }, IO, {"merges[9]", "'wd' is not a token"});
  expect_error([&] { bpe([](Values& V) { V["merges"] = nums(kU32, {1}); }); }, IO, {"tokenizer.ggml.merges"});
  expect_error([&] { bpe([](Values& V) { V["pre"] = str("gpt-9"); }); }, TG_ERROR_UNSUPPORTED, {"'gpt-9'"});
  // decode of ids outside the vocab
  Tokenizer t(Spm().file());
  expect_error([&] { t.decode(-1); }, TG_ERROR_INVALID_ARGUMENT, {"-1"});
  expect_error([&] { t.decode(std::vector<int32_t>{1, t.n_vocab()}); }, TG_ERROR_INVALID_ARGUMENT, {std::to_string(t.n_vocab())});
  expect_error([&] { t.text(1 << 30); }, TG_ERROR_INVALID_ARGUMENT, {"outside the vocab"});
}

// What llama.cpp tolerates (with a warning), this does too, the same way
TEST(Tokenizer, ToleratesWhatLlamaCppTolerates) {
  GGUFFile f = Spm().file();
  f.values["tokenizer.ggml.tokens"].strs[262] = "";                // an empty token is named [EMPTY_262]
  f.values["tokenizer.ggml.bos_token_id"] = u32(4e9);              // an id outside the vocab leaves the default
  f.values["tokenizer.ggml.token_type"].nums[263] = 99;            // an unknown type: no attributes
  f.values["tokenizer.ggml.padding_token_id"] = u32(123456789);
  Tokenizer t(f);
  EXPECT_EQ(t.text(262), "[EMPTY_262]");
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.attr(263), 0);
  EXPECT_EQ(t.decode(263, true), "");
}

// The parser's checks reach the tokenizer's arrays: invalid UTF-8 and counts the file can't hold name the key
TEST(Tokenizer, HostileGgufArrays) {
  GgufBytes g;
  g.string("tokenizer.ggml.model", "llama").string_array("tokenizer.ggml.tokens", {"<unk>", "a\xff"});
  expect_error([&] { parse(g.bytes()); }, TG_ERROR_IO, {"vocab.gguf", "tokenizer.ggml.tokens", "UTF-8"});
  GgufBytes h;
  h.string("tokenizer.ggml.model", "llama").string_array("tokenizer.ggml.tokens", {"<unk>"}, 1ull << 40);
  expect_error([&] { parse(h.bytes()); }, TG_ERROR_IO, {"vocab.gguf", "needs more than"});
}

// Every text is fine: invalid UTF-8, NUL bytes, lone halves of special tokens
TEST(Tokenizer, AnyBytesEncode) {
  Tokenizer s(Spm().file()), b(Bpe().file());
  std::vector<std::string> texts = {std::string("\0a\0", 3), "\xc3", "\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80",
                                   "<|eot_id", "<tool"};
  for (const std::string& text : texts) {
    for (Tokenizer* t : {&s, &b}) {
      std::vector<int32_t> ids = t->encode(text, true, true);
      for (int32_t id : ids) EXPECT_TRUE(id >= 0 && id < t->n_vocab());
      t->decode(ids);
    }
  }
  // SentencePiece keeps the bytes as they are; byte-level BPE reads a bad one as U+FFFD
  EXPECT_EQ(s.decode(s.encode("\x80\xff", false, false)), "\x80\xff");
  EXPECT_EQ(b.decode(b.encode("a\x80", false, false)), "a\xEF\xBF\xBD");
}

// Encoding is O(n log n): one merge-able character, spaces, special-token look-alikes and special tokens. Eight times
// the text takes about eight times as long (a quadratic step would take 64 times); an optimized build encodes a megabyte
// of each well within a second (2 s here: the tests share the cores)
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
constexpr size_t kBig = 1 << 20;
constexpr double kLimit = 2.0;
#else
constexpr size_t kBig = 1 << 17;  // unoptimized or sanitized: only the growth is checked
constexpr double kLimit = 1e9;
#endif
TEST(Tokenizer, LongInputsStayFast) {
  Spm sv;
  Bpe bv;
  for (const char* w : {"aa", "aaaa", "ĠĠ", "ĠĠĠĠ"}) bv.tokens.push_back(w), bv.types.push_back(NORMAL);
  for (const char* m : {"a a", "aa aa", "Ġ Ġ", "ĠĠ ĠĠ"}) bv.merges.push_back(m);
  sv.add("aa", -1, NORMAL), sv.add("aaaa", -2, NORMAL);
  Tokenizer s(sv.file()), b(bv.file());
  auto repeat = [](const std::string& unit, size_t n) {
    std::string out;
    while (out.size() < n) out += unit;
    return out.substr(0, n);
  };
  auto seconds = [](const Tokenizer& t, const std::string& text) {
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_GT(t.encode(text, false, true).size(), 0u);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (const char* unit : {"a", " ", "<|eot_id|>x<|eot_id<tool>"}) {
    for (const Tokenizer* t : {&s, &b}) {
      double small = seconds(*t, repeat(unit, kBig / 8)), big = seconds(*t, repeat(unit, kBig));
      EXPECT_LT(big, 24 * small + 0.05) << unit << ": " << small << " s for an eighth";
      EXPECT_LT(big, kLimit) << unit;
    }
  }
  EXPECT_EQ(b.encode(std::string(kBig, 'a'), false, false).size(), kBig / 4);
}
