// Drives nn::Tokenizer for tests/python/test_llm_tokenizer.py, which runs llama.cpp beside it on the same GGUF files.
//   tg_tokenize_probe <file.gguf>              requests on stdin, one a line: "<add_special> <parse_special> <text as hex>";
//                                              a JSON line for each: {"ids": [...], "text": "<hex>"}, text the ids decoded
//                                              with remove_special = add_special and unparse_special = parse_special
//   tg_tokenize_probe <file.gguf> info         {"n_vocab", "bos", "eos", "add_bos", "add_eos", "eog": [...],
//                                              "pieces": [["<hex>", "<hex>"], ...]}: each token decoded without and with special
//   tg_tokenize_probe <file.gguf> time <file>  encodes the file's bytes (no special tokens): {"tokens", "ms"}
// Errors: {"error_hex": "<message as hex>", "status": <tg_status>} and exit status 1.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "helpers.h"
#include "nn/tokenizer.h"

namespace {

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) out += d[c >> 4], out += d[c & 15];
  return out;
}
std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out += char(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}
std::string ids_json(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); i++) s += (i ? "," : "") + std::to_string(ids[i]);
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <file.gguf> [info | time <file>]\n", argv[0]);
    return 2;
  }
  try {
    auto t0 = std::chrono::steady_clock::now();
    tg::nn::Tokenizer tok = tg::nn::Tokenizer::load(argv[1]);
    double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::string mode = argc > 2 ? argv[2] : "";
    if (mode == "info") {
      std::string eog, pieces;
      for (int32_t t = 0; t < tok.n_vocab(); t++) {
        if (tok.is_eog(t)) eog += (eog.empty() ? "" : ",") + std::to_string(t);
        pieces += std::string(t ? "," : "") + "[\"" + hex(tok.decode(t, false)) + "\",\"" + hex(tok.decode(t, true)) + "\"]";
      }
      std::printf("{\"n_vocab\": %d, \"bos\": %d, \"eos\": %d, \"add_bos\": %s, \"add_eos\": %s, \"load_ms\": %.3f, ", tok.n_vocab(), tok.bos(),
                  tok.eos(), tok.add_bos() ? "true" : "false", tok.add_eos() ? "true" : "false", load_ms);
      std::printf("\"eog\": [%s], \"pieces\": [%s]}\n", eog.c_str(), pieces.c_str());
      return 0;
    }
    if (mode == "time") {
      std::ifstream in(argc > 3 ? argv[3] : "", std::ios::binary);
      if (!in) throw tg::Error(TG_ERROR_IO, "cannot read the text file");
      std::stringstream ss;
      ss << in.rdbuf();
      std::string text = ss.str();
      auto t1 = std::chrono::steady_clock::now();
      size_t n = tok.encode(text, false, false).size();
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
      std::printf("{\"bytes\": %zu, \"tokens\": %zu, \"ms\": %.3f}\n", text.size(), n, ms);
      return 0;
    }
    std::string line;
    while (std::getline(std::cin, line)) {
      std::istringstream req(line);
      int add = 0, parse = 0;
      std::string h;
      req >> add >> parse >> h;
      std::vector<int32_t> ids = tok.encode(unhex(h), add, parse);
      std::printf("{\"ids\": %s, \"text\": \"%s\"}\n", ids_json(ids).c_str(), hex(tok.decode(ids, add, parse)).c_str());
    }
  } catch (const tg::Error& e) {
    std::printf("{\"error_hex\": \"%s\", \"status\": %d}\n", hex(e.what()).c_str(), int(e.code));
    return 1;
  }
  return 0;
}
