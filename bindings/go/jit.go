package tinygrad

/*
#include <tinygrad.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// JitFunc is the function a Jit captures: it reads the inputs (valid during the call only: Retain one to keep it)
// and returns the outputs, which the Jit takes (they are closed after the call).
type JitFunc func(inputs []*Tensor) ([]*Tensor, error)

type jitState struct {
	fn  JitFunc
	err error // the last error fn returned, for Call to return instead of the bare status
}

var jitStates sync.Map // *C.tg_jit -> *jitState

// NewJit captures fn (tinygrad's TinyJit): the first Call runs it, the second captures its kernels, later calls
// replay them with the new inputs without running fn. Close releases the Jit and fn.
func NewJit(fn JitFunc) (*Jit, error) {
	if fn == nil {
		return nil, newError(ErrInvalidArgument, "NewJit: fn is nil")
	}
	st := &jitState{fn: fn}
	h := cgo.NewHandle(st)
	j, err := jitCreate(h)
	if err != nil {
		h.Delete()
		return nil, err
	}
	key := j.p
	jitStates.Store(key, st)
	j.done = func() { jitStates.Delete(key); h.Delete() }
	return j, nil
}

// Call runs the Jit on inputs and returns nOutputs new tensors. When fn failed, its error is returned as is.
func (j *Jit) Call(inputs []*Tensor, nOutputs int) ([]*Tensor, error) {
	out, err := j.call(inputs, nOutputs)
	if err != nil && j.ptr() != nil {
		if v, ok := jitStates.Load(j.ptr()); ok {
			if st := v.(*jitState); st.err != nil {
				err, st.err = st.err, nil
			}
		}
	}
	return out, err
}

//export tgwGoJitFn
func tgwGoJitFn(h C.uintptr_t, inputs **C.tg_tensor, nIn C.size_t, outputs **C.tg_tensor, nOut C.size_t) (status C.tg_status) {
	st := cgo.Handle(h).Value().(*jitState)
	st.err = nil
	ins := make([]*Tensor, nIn)
	for i, p := range unsafe.Slice(inputs, nIn) {
		ins[i] = newTensor(C.tg_tensor_retain(p)) // the library's references are borrowed: own one for Go's lifetime rules
	}
	var outs []*Tensor
	defer func() {
		// A panic must not unwind through the library's C frames: it becomes fn's error.
		if r := recover(); r != nil {
			st.err, status = fmt.Errorf("tinygrad: jit function panicked: %v", r), C.TG_ERROR_RUNTIME
		}
		for _, t := range append(ins, outs...) {
			t.Close()
		}
	}()
	outs, err := st.fn(ins)
	if err == nil && len(outs) < int(nOut) {
		err = newErrorf(ErrInvalidArgument, "jit function returned %d tensors, the call asked for %d", len(outs), nOut)
	}
	for i := 0; err == nil && i < int(nOut); i++ {
		if outs[i].ptr() == nil {
			err = newErrorf(ErrInvalidArgument, "jit function returned a nil or closed tensor as output %d", i)
		}
	}
	if err != nil {
		st.err = err
		var e *Error
		if errors.As(err, &e) && e.Status != OK {
			return C.tg_status(e.Status)
		}
		return C.TG_ERROR_RUNTIME
	}
	slots := unsafe.Slice(outputs, nOut)
	for i := range slots {
		slots[i] = C.tg_tensor_retain(outs[i].p)
	}
	return C.TG_OK
}
