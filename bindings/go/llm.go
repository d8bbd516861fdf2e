package tinygrad

// #include <stdint.h>
import "C"

import (
	"runtime/cgo"
)

// Language models from GGUF files (docs/llm.md) with token ids as Go slices. The generated layer has the rest:
// Eval, Sample, Tokenize and Detokenize on tensors, Config, Metadata, TokenPiece, Bos, Eos, IsEog, Reset, Position.

// LoadLlm loads the model in the GGUF file at path onto device ("" = the default) with a KV cache of context
// positions (0: the file's context length, capped by the library). LlmLoad takes every option.
func LoadLlm(path, device string, context int64) (*Llm, error) {
	return LlmLoad(path, &LlmOptions{Device: device, Context: context})
}

// GreedySampling picks the most likely token at every step.
func GreedySampling() LlmSampling {
	s, err := LlmSamplingDefault()
	if err != nil { // fails only for a NULL pointer, which &s is not
		panic(err)
	}
	s.Temperature = 0
	return s
}

func idTensor(ids []int32) (*Tensor, error) { return FromSlice(ids, []int64{int64(len(ids))}, "") }

// TokenizeIDs is Tokenize as a slice: the ids of text (llama.cpp's); addSpecial adds the BOS/EOS the file asks for,
// parseSpecial reads control tokens' texts as those tokens.
func (m *Llm) TokenizeIDs(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	t, err := m.Tokenize(text, addSpecial, parseSpecial)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return ToSlice[int32](t)
}

// DetokenizeIDs is Detokenize of a slice: removeSpecial drops a leading BOS and a trailing EOS, unparseSpecial writes
// control tokens' texts.
func (m *Llm) DetokenizeIDs(ids []int32, removeSpecial, unparseSpecial bool) (string, error) {
	t, err := idTensor(ids)
	if err != nil {
		return "", err
	}
	defer t.Close()
	return m.Detokenize(t, removeSpecial, unparseSpecial)
}

// EvalIDs feeds ids at the current position (which moves on by their count) and returns the last one's logits,
// a realized (vocab,) float32 tensor.
func (m *Llm) EvalIDs(ids []int32) (*Tensor, error) {
	t, err := idTensor(ids)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	return m.Eval(t)
}

type llmGen struct {
	onToken func(token int32, piece string) bool
	out     []int32
	panic   any
	panics  bool
}

// Generate feeds prompt at the current position, then samples up to maxTokens tokens (s nil: llama.cpp's defaults,
// LlmSamplingDefault), feeding each back. It stops at an end-of-generation token (not passed on), when the context
// is full, or when onToken (nil: none) returns true; onToken gets each token and its text (TokenPiece). It returns
// the tokens generated, those passed to onToken. A panic in onToken stops the generation and is raised again here,
// once the library has returned.
func (m *Llm) Generate(prompt []int32, maxTokens int64, s *LlmSampling, onToken func(token int32, piece string) bool) ([]int32, error) {
	p, err := idTensor(prompt)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	g := &llmGen{onToken: onToken}
	h := cgo.NewHandle(g)
	defer h.Delete()
	err = llmGenerate(m, p, maxTokens, s, h)
	if g.panics {
		panic(g.panic)
	}
	if err != nil {
		return nil, err
	}
	return g.out, nil
}

//export tgwGoLlmToken
func tgwGoLlmToken(h C.uintptr_t, token C.int64_t, piece *C.char) (stop C.int) {
	g := cgo.Handle(h).Value().(*llmGen)
	defer func() {
		// a panic must not unwind through the library's C frames: Generate raises it again
		if r := recover(); r != nil {
			g.panic, g.panics, stop = r, true, 1
		}
	}()
	g.out = append(g.out, int32(token))
	if g.onToken != nil && g.onToken(int32(token), C.GoString(piece)) {
		return 1
	}
	return 0
}
