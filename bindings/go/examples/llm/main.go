// llm is greedy generation with a GGUF language model through the Go binding: `llm <model.gguf> <prompt> <n>`. It
// prints the prompt and the generated text, then the token ids of both, as examples/c/llm.c prints them with --ids
// (tests/bindings/compare_llm.sh compares the id lines of C, Python, Rust and Go).
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	tg "libtinygrad.org/tinygrad"
)

func run(path, prompt string, n int64) error {
	m, err := tg.LoadLlm(path, "", 0)
	if err != nil {
		return err
	}
	defer m.Close()
	ids, err := m.TokenizeIDs(prompt, true, false)
	if err != nil {
		return err
	}
	var text strings.Builder
	s := tg.GreedySampling()
	out, err := m.Generate(ids, n, &s, func(_ int32, piece string) bool {
		text.WriteString(piece)
		return false
	})
	if err != nil {
		return err
	}
	line := func(ids []int32) string {
		var b strings.Builder
		for _, t := range ids {
			fmt.Fprintf(&b, " %d", t)
		}
		return b.String()
	}
	fmt.Println(prompt + text.String())
	fmt.Println("prompt:" + line(ids))
	fmt.Println("tokens:" + line(out))
	return nil
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: llm <model.gguf> <prompt> <n>")
		os.Exit(2)
	}
	n, err := strconv.ParseInt(os.Args[3], 10, 64)
	if err == nil {
		err = run(os.Args[1], os.Args[2], n)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "llm:", err)
		os.Exit(1)
	}
}
