package tinygrad

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <tinygrad.h>

// Exported from jit.go (a file with //export may only declare C functions, so the trampoline lives here).
extern tg_status tgwGoJitFn(uintptr_t h, tg_tensor** inputs, size_t n_inputs, tg_tensor** outputs, size_t n_outputs);

static tg_status tgw_jit_trampoline(void* userdata, tg_tensor* const* inputs, size_t n_inputs, tg_tensor** outputs,
                                    size_t n_outputs) {
  return tgwGoJitFn((uintptr_t)userdata, (tg_tensor**)inputs, n_inputs, outputs, n_outputs);
}

// tg_jit_create and, on failure, the error read on the same thread.
static tg_jit* tgw_jit_create_go(uintptr_t h, tg_status* code, char** msg) {
  tg_jit* j = tg_jit_create(tgw_jit_trampoline, (void*)h);
  if (!j) *code = tg_last_error(), *msg = strdup(tg_last_error_message());
  return j;
}
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

func jitCreate(h cgo.Handle) (*Jit, error) {
	var code C.tg_status
	var msg *C.char
	p := C.tgw_jit_create_go(C.uintptr_t(h), &code, &msg)
	if p == nil {
		defer C.free(unsafe.Pointer(msg))
		return nil, newError(Status(code), C.GoString(msg))
	}
	return newJit(p), nil
}
