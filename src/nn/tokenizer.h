// The tokenizers of GGUF language models, built from the file's tokenizer.ggml.* metadata and equal to llama.cpp's
// (llama_tokenize, llama_token_to_piece, llama_detokenize) token for token: "llama" (SentencePiece: scored pieces merged
// by score, byte fallback tokens <0xNN>, spaces as U+2581) and "gpt2" (byte-level BPE: ranked merges over the words a
// pre-tokenizer regex, chosen by tokenizer.ggml.pre, splits the text into). Control and user-defined tokens are found in
// the text before either runs, as llama.cpp's parse_special does. The metadata comes from files off the internet: every
// array is checked against the others and the vocab before use, and bad metadata is a tg::Error naming the key.
// A Tokenizer doesn't change once built: encode and decode may run on several threads at once.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nn/state.h"

namespace tg::nn {

class Tokenizer {
 public:
  enum Attr : uint16_t {  // llama.cpp's llama_token_attr bits, from tokenizer.ggml.token_type
    UNKNOWN = 1, UNUSED = 2, NORMAL = 4, CONTROL = 8, USER_DEFINED = 16, BYTE = 32,
  };
  enum class Kind { SPM, BPE };
  enum class Split : uint8_t;  // one pre-tokenizer regex (tokenizer.cpp)

  // From a parsed GGUF; `name` (the file) starts error messages. TG_ERROR_UNSUPPORTED for a tokenizer.ggml.model or
  // tokenizer.ggml.pre we don't implement, TG_ERROR_IO for metadata that is missing, mistyped or inconsistent.
  explicit Tokenizer(const GGUFFile& f, const std::string& name = "GGUF");
  static Tokenizer load(const std::string& path);  // gguf_parse of the file at `path`, then the above

  // Token ids of UTF-8 `text` (invalid bytes read as U+FFFD, as llama.cpp reads them). add_special: the BOS/EOS tokens
  // the vocab asks for (tokenizer.ggml.add_bos_token / add_eos_token); parse_special: control tokens' texts in `text`
  // become those tokens (user-defined tokens always do). TG_ERROR_INVALID_ARGUMENT for a text of 2 GiB or more.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
  // One token's text (llama_token_to_piece): a byte token as its byte, U+2581 or the byte-level alphabet mapped back;
  // control and unknown tokens only when `special`. TG_ERROR_INVALID_ARGUMENT for an id outside the vocab.
  std::string decode(int32_t token, bool special = false) const;
  // The text of `tokens` as llama_detokenize gives it: remove_special drops a leading BOS and a trailing EOS the vocab
  // adds; unparse_special is decode's `special`. The space a SentencePiece vocab puts before the text goes (unless the
  // first token is a BOS), and the pre-tokenizers llama.cpp cleans up after (gpt-2, llama3, default, ...) lose the space
  // before . , ! ? and 's 'm 're 've: not every text comes back as it went in, exactly as in llama.cpp.
  std::string decode(const std::vector<int32_t>& tokens, bool remove_special = false, bool unparse_special = false) const;

  Kind kind() const { return kind_; }
  int32_t n_vocab() const { return int32_t(text_.size()); }
  int32_t bos() const { return bos_; }  // -1 when the vocab has none
  int32_t eos() const { return eos_; }
  bool add_bos() const { return add_bos_; }
  bool add_eos() const { return add_eos_; }
  bool is_eog(int32_t token) const;  // ends generation: EOS, EOT and the end-of-turn tokens llama.cpp knows by text
  const std::string& text(int32_t token) const;  // the vocab's entry
  uint16_t attr(int32_t token) const;

 private:
  // lookups by std::string_view into maps keyed by std::string
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using IdMap = std::unordered_map<std::string, int32_t, Hash, std::equal_to<>>;
  struct Merge {
    int32_t rank, id;
  };

  int32_t check(int32_t token) const;
  int32_t find(std::string_view s) const;
  void spm_encode(std::string_view text, std::vector<int32_t>& out) const;
  void bpe_encode(std::string_view text, std::vector<int32_t>& out) const;
  void bpe_word(std::string_view word, std::vector<int32_t>& out) const;

  Kind kind_;
  std::vector<std::string> text_;  // token id -> text
  std::vector<uint32_t> order_;    // token id -> its score as an integer in the same order (SentencePiece's merge order)
  std::vector<uint16_t> attr_;
  std::vector<std::string> piece_;  // token id -> its bytes when decoded with special (llama.cpp's token-to-piece cache)
  IdMap ids_;                       // text -> token id
  std::vector<int32_t> special_;    // control, user-defined and unknown tokens, longest text first
  // a trie of the special tokens' texts: (node, byte) -> child node, the special_ index whose text a node ends (-1 for
  // none), and the bytes those texts start with
  std::unordered_map<uint64_t, int32_t> trie_;
  std::vector<int32_t> trie_end_;
  bool first_byte_[256] = {};
  std::vector<bool> eog_;
  int32_t bos_ = -1, eos_ = -1, unk_ = -1;
  bool add_bos_ = false, add_eos_ = false, add_space_prefix_ = false, clean_spaces_ = false;
  size_t max_len_ = 0;  // the longest token text: no longer span can be a token
  int32_t byte_tok_[256];  // SentencePiece: the <0xNN> tokens, -1 where absent
  // BPE: the pre-tokenizer's regexes in order; merges by (left id, right id); the token of each single byte and the ids by
  // the raw bytes a token stands for (its byte-level text mapped back), so words need no mapping to that alphabet
  std::vector<Split> splits_;
  bool ignore_merges_ = false;
  std::unordered_map<uint64_t, Merge> merges_;
  int32_t byte_sym_[256];
  IdMap raw_ids_;
};

}  // namespace tg::nn
