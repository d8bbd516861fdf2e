package tinygrad

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <tinygrad.h>

// Exported from llm.go (a file with //export may only declare C functions, so the trampoline lives here).
extern int tgwGoLlmToken(uintptr_t h, int64_t token, char* piece);

static int tgw_llm_token_trampoline(void* userdata, int64_t token, const char* piece) {
  return tgwGoLlmToken((uintptr_t)userdata, token, (char*)piece);
}

// tg_llm_generate with the Go callback behind handle h and, on failure, the error read on the same thread.
static int64_t tgw_llm_generate_go(tg_llm* m, const tg_tensor* prompt, int64_t max_tokens, const tg_llm_sampling* s,
                                   uintptr_t h, tg_status* code, char** msg) {
  int64_t n = tg_llm_generate(m, prompt, max_tokens, s, tgw_llm_token_trampoline, (void*)h);
  if (n < 0) *code = tg_last_error(), *msg = strdup(tg_last_error_message());
  return n;
}
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"unsafe"
)

func llmGenerate(m *Llm, prompt *Tensor, maxTokens int64, s *LlmSampling, h cgo.Handle) error {
	var cs *C.tg_llm_sampling
	if s != nil {
		cs = new(C.tg_llm_sampling)
		var frees []unsafe.Pointer
		defer func() { freeAll(frees) }()
		if err := s.toC(cs, &frees); err != nil {
			return err
		}
	}
	var code C.tg_status
	var msg *C.char
	n := C.tgw_llm_generate_go(m.ptr(), prompt.ptr(), C.int64_t(maxTokens), cs, C.uintptr_t(h), &code, &msg)
	runtime.KeepAlive(m)
	runtime.KeepAlive(prompt)
	if n < 0 {
		defer C.free(unsafe.Pointer(msg))
		return newError(Status(code), C.GoString(msg))
	}
	return nil
}
