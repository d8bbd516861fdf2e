package tinygrad_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	tg "libtinygrad.org/tinygrad"
)

type failure struct{ err error }

// must unwraps a result; a failure ends the test through guard, deferred first thing in every test.
func must[T any](v T, err error) T {
	if err != nil {
		panic(failure{err})
	}
	return v
}

func guard(t *testing.T) {
	if r := recover(); r != nil {
		if f, ok := r.(failure); ok {
			t.Fatal(f.err)
		}
		panic(r)
	}
}

func vals[T tg.Elem](x *tg.Tensor) []T { return must(tg.ToSlice[T](x)) }

func eq[T comparable](t *testing.T, got, want []T) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// settled is the live handle count once pending finalizers have run (a count that stays put across GCs).
func settled() int64 {
	last := int64(-1)
	for i := 0; i < 50; i++ {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		if n := tg.LiveHandles(); n == last {
			return n
		} else {
			last = n
		}
	}
	return last
}

func TestOps(t *testing.T) {
	defer guard(t)
	a := must(tg.FromSlice([]float32{1, 2, 3, 4}, []int64{2, 2}, ""))
	defer a.Close()
	b := must(tg.FromSlice([]float32{10, 20, 30, 40}, []int64{2, 2}, ""))
	defer b.Close()
	sum := must(a.Add(b))
	defer sum.Close()
	eq(t, vals[float32](sum), []float32{11, 22, 33, 44})
	mm := must(a.Matmul(b))
	defer mm.Close()
	eq(t, vals[float32](mm), []float32{1*10 + 2*30, 1*20 + 2*40, 3*10 + 4*30, 3*20 + 4*40})
	red := must(a.Sum([]int64{1}, false))
	defer red.Close()
	eq(t, vals[float32](red), []float32{3, 7})
	eq(t, must(red.Shape()), []int64{2})
	all := must(a.Sum(nil, false))
	defer all.Close()
	if v := must(tg.Item[float32](all)); v != 10 {
		t.Fatalf("sum %v, want 10", v)
	}
	sc := must(a.MulScalar(0.5))
	defer sc.Close()
	eq(t, vals[float32](sc), []float32{0.5, 1, 1.5, 2})
	tr := must(a.Transpose(0, 1))
	defer tr.Close()
	eq(t, vals[float32](tr), []float32{1, 3, 2, 4})
	lt := must(a.Lt(b))
	defer lt.Close()
	if dt := must(lt.DType()); dt != tg.Bool || dt.String() != "bool" {
		t.Fatalf("comparison dtype %v", dt)
	}
	eq(t, vals[bool](lt), []bool{true, true, true, true})
	i := must(tg.Arange(0, 6, 1, tg.Int32, ""))
	defer i.Close()
	r := must(i.Reshape([]int64{2, 3}))
	defer r.Close()
	g := must(r.Getitem([]tg.Index{tg.At(-1), tg.Range(0, 3, 2)}))
	defer g.Close()
	eq(t, vals[int32](g), []int32{3, 5})
	pieces := must(i.Split([]int64{2, 4}, 0))
	eq(t, vals[int32](pieces[0]), []int32{0, 1})
	eq(t, vals[int32](pieces[1]), []int32{2, 3, 4, 5})
	chunks := must(i.Chunk(3, 0))
	if len(chunks) != 3 {
		t.Fatalf("%d chunks", len(chunks))
	}
	eq(t, vals[int32](chunks[2]), []int32{4, 5})
	for _, p := range append(pieces, chunks...) {
		p.Close()
	}
	srt, idx, err := must(tg.FromSlice([]float32{3, 1, 2}, []int64{3}, "")).Sort(0, false)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, vals[float32](srt), []float32{1, 2, 3})
	eq(t, vals[int32](idx), []int32{1, 2, 0})
	srt.Close()
	idx.Close()
	if _, err := tg.ToSlice[int32](a); !errors.Is(err, tg.ErrDType) {
		t.Fatalf("ToSlice with the wrong type: %v", err)
	}
}

func TestAutograd(t *testing.T) {
	defer guard(t)
	x := must(tg.FromSlice([]float32{1, -2, 3}, []int64{3}, ""))
	defer x.Close()
	if err := x.SetRequiresGrad(true); err != nil {
		t.Fatal(err)
	}
	sq := must(x.Square())
	defer sq.Close()
	s := must(sq.Sum(nil, false))
	defer s.Close()
	if err := s.Backward(); err != nil {
		t.Fatal(err)
	}
	g := must(x.Grad())
	defer g.Close()
	eq(t, vals[float32](g), []float32{2, -4, 6})
}

func TestErrors(t *testing.T) {
	defer guard(t)
	a := must(tg.Zeros([]int64{2, 3}, tg.Float32, ""))
	defer a.Close()
	b := must(tg.Zeros([]int64{4, 5}, tg.Float32, ""))
	defer b.Close()
	c, err := a.Matmul(b)
	var e *tg.Error
	if c != nil || !errors.As(err, &e) {
		t.Fatalf("matmul of (2,3) by (4,5): %v, %v", c, err)
	}
	if e.Status != tg.ErrShape || e.Code != "TG_ERROR_SHAPE" || e.Message != "matmul: shapes (2,3) and (4,5) don't match" {
		t.Fatalf("error %+v", *e)
	}
	if !errors.Is(err, tg.ErrShape) || errors.Is(err, tg.ErrDType) || err.Error() != "TG_ERROR_SHAPE: "+e.Message {
		t.Fatalf("errors.Is / Error() on %v", err)
	}
	if _, err := a.Reshape([]int64{7}); !errors.Is(err, tg.ErrShape) || !strings.Contains(err.Error(), "7") {
		t.Fatalf("bad reshape: %v", err)
	}
	if _, err := tg.Zeros([]int64{2}, tg.Float32, "NOSUCHDEVICE"); !errors.Is(err, tg.ErrDevice) {
		t.Fatalf("unknown device: %v", err)
	}
	if _, err := a.Roll([]int64{1, 2}, []int64{0}); !errors.Is(err, tg.ErrInvalidArgument) {
		t.Fatalf("roll with lengths that differ: %v", err)
	}
	if _, err := tg.OptimSGD(nil, &tg.OptimizerOptions{NSCoefficients: make([]float64, 9)}); !errors.Is(err, tg.ErrInvalidArgument) {
		t.Fatalf("9 Newton-Schulz coefficients: %v", err)
	}
	d := must(a.Neg())
	d.Close()
	d.Close() // idempotent
	if _, err := d.Add(a); !errors.Is(err, tg.ErrInvalidArgument) {
		t.Fatalf("a closed tensor: %v", err)
	}
	if _, err := tg.DType(99).Size(); !errors.Is(err, tg.ErrInvalidArgument) {
		t.Fatalf("dtype 99: %v", err)
	}
	if n := must(tg.Float16.Size()); n != 2 {
		t.Fatalf("float16 size %d", n)
	}
	if p := must(tg.Int32.Promote(tg.Float32)); p != tg.Float32 {
		t.Fatalf("int32+float32 promote to %v", p)
	}
}

func TestCloseReleases(t *testing.T) {
	defer guard(t)
	start := settled()
	a := must(tg.Ones([]int64{3}, tg.Float32, ""))
	b := must(a.Exp())
	m := must(tg.NNLinear(2, 2, true, ""))
	ps := must(m.Parameters())
	if n := tg.LiveHandles(); n != start+3+int64(len(ps)) {
		t.Fatalf("%d live handles, want %d", n, start+3+int64(len(ps)))
	}
	for _, x := range append(ps, a, b) {
		x.Close()
	}
	m.Close()
	if n := tg.LiveHandles(); n != start {
		t.Fatalf("%d live handles after Close, want %d", n, start)
	}
}

func TestFinalizers(t *testing.T) {
	defer guard(t)
	start := settled()
	func() {
		for i := 0; i < 20; i++ {
			x := must(tg.Full([]int64{2}, float64(i), tg.Float32, ""))
			_ = must(x.AddScalar(1)) // never closed
		}
	}()
	if tg.LiveHandles() != start+40 {
		t.Fatalf("%d live handles, want %d", tg.LiveHandles(), start+40)
	}
	deadline := time.Now().Add(5 * time.Second)
	for tg.LiveHandles() != start {
		if time.Now().After(deadline) {
			t.Fatalf("finalizers left %d live handles, want %d", tg.LiveHandles(), start)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConcurrent(t *testing.T) {
	defer guard(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for it := 0; it < 5; it++ {
				k := float32(g*10 + it)
				x, err := tg.FromSlice([]float32{k, k + 1, k + 2}, []int64{3}, "")
				if err != nil {
					errs <- err
					return
				}
				y, err := x.MulScalar(2)
				if err == nil {
					var s *tg.Tensor
					if s, err = y.Sum(nil, false); err == nil {
						var v float32
						if v, err = tg.Item[float32](s); err == nil && v != 6*k+6 {
							err = fmt.Errorf("goroutine %d: sum %v, want %v", g, v, 6*k+6)
						}
						s.Close()
					}
					y.Close()
				}
				x.Close()
				if _, e := x.Neg(); !errors.Is(e, tg.ErrInvalidArgument) && err == nil {
					err = fmt.Errorf("goroutine %d: a closed tensor gave %v", g, e)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestExpr(t *testing.T) {
	defer guard(t)
	i := must(tg.ExprVariable("i", 0, 9))
	defer i.Close()
	four := must(tg.ExprConst(4))
	defer four.Close()
	e := must(tg.ExprBinary(tg.BinOpMul, i, four))
	defer e.Close()
	if s := must(e.Render()); !strings.Contains(s, "i") || !strings.Contains(s, "4") {
		t.Fatalf("render %q", s)
	}
	if v := must(e.Eval([]string{"i"}, []int64{7})); v != 28 {
		t.Fatalf("eval %d", v)
	}
	lo, hi, err := e.Bounds()
	if err != nil || lo != 0 || hi != 36 {
		t.Fatalf("bounds %d %d %v", lo, hi, err)
	}
	if _, err := e.Eval(nil, nil); !errors.Is(err, tg.ErrInvalidArgument) {
		t.Fatalf("eval unbound: %v", err)
	}
}

func TestJit(t *testing.T) {
	defer guard(t)
	start := settled()
	calls := 0
	j := must(tg.NewJit(func(in []*tg.Tensor) ([]*tg.Tensor, error) {
		calls++
		y, err := in[0].MulScalar(2)
		if err != nil {
			return nil, err
		}
		defer y.Close()
		z, err := y.AddScalar(1)
		return []*tg.Tensor{z}, err
	}))
	for k := 0; k < 4; k++ {
		x := must(tg.FromSlice([]float32{float32(k), 1}, []int64{2}, ""))
		out := must(j.Call([]*tg.Tensor{x}, 1))
		eq(t, vals[float32](out[0]), []float32{float32(2*k + 1), 3})
		out[0].Close()
		x.Close()
	}
	if n := must(j.CallCount()); n != 4 || calls != 2 {
		t.Fatalf("call count %d, fn ran %d times", n, calls)
	}
	j.Close()
	boom := errors.New("boom")
	bad := must(tg.NewJit(func([]*tg.Tensor) ([]*tg.Tensor, error) { return nil, boom }))
	if _, err := bad.Call(nil, 1); err != boom {
		t.Fatalf("a failing jit function gave %v", err)
	}
	bad.Close()
	if n := settled(); n != start {
		t.Fatalf("%d live handles after the jits, want %d", n, start)
	}
}

func TestStateAndPlan(t *testing.T) {
	defer guard(t)
	s := must(tg.StateCreate())
	defer s.Close()
	w := must(tg.Ones([]int64{2, 3}, tg.Float32, ""))
	defer w.Close()
	if err := s.Set("w", w); err != nil {
		t.Fatal(err)
	}
	if n := must(s.Count()); n != 1 || must(s.Name(0)) != "w" {
		t.Fatalf("state count %d", n)
	}
	dt, shape, err := s.Info("w")
	if err != nil || dt != tg.Float32 || fmt.Sprint(shape) != "[2 3]" {
		t.Fatalf("info %v %v %v", dt, shape, err)
	}
	if _, _, err := s.Info("nope"); !errors.Is(err, tg.ErrInvalidArgument) {
		t.Fatalf("info of a missing name: %v", err)
	}
	e := must(w.Exp())
	defer e.Close()
	p := must(tg.PlanCreate([]*tg.Tensor{e}))
	defer p.Close()
	if n := must(p.KernelCount()); n < 1 {
		t.Fatalf("%d kernels", n)
	}
	k := must(p.Kernel(0))
	if k.Name == "" || k.Source == "" || len(k.BufferNbytes) < 1 {
		t.Fatalf("kernel %+v", k)
	}
	o := must(tg.OptimizerOptionsDefault(tg.OptimizerKindMuon))
	if len(o.NSCoefficients) != 3 || o.NSCoefficients[0] != 3.4445 {
		t.Fatalf("muon defaults %+v", o)
	}
}

// TestOnnx runs one of ONNX's conformance models (Debian's libonnx-testdata) through Model and compares with its
// expected output.
func TestOnnx(t *testing.T) {
	defer guard(t)
	dir := "/usr/share/libonnx-testdata/data/node/test_softmax_axis_1"
	m := must(tg.LoadModel(dir + "/model.onnx"))
	defer m.Close()
	if in := must(m.Inputs()); fmt.Sprint(in) != "[x]" {
		t.Fatalf("inputs %v", in)
	}
	x := must(tg.OnnxLoadTensor(dir+"/test_data_set_0/input_0.pb", ""))
	defer x.Close()
	want := must(tg.OnnxLoadTensor(dir+"/test_data_set_0/output_0.pb", ""))
	defer want.Close()
	for run := 0; run < 3; run++ { // the third run replays the capture
		outs := must(m.Run(x))
		got, exp := must(tg.ToSlice[float32](outs[0])), must(tg.ToSlice[float32](want))
		for i := range exp {
			if d := got[i] - exp[i]; d > 1e-5 || d < -1e-5 {
				t.Fatalf("run %d element %d: %v, expected %v", run, i, got[i], exp[i])
			}
		}
		for _, o := range outs {
			o.Close()
		}
	}
	if _, err := m.Run(); !errors.Is(err, tg.ErrInvalidArgument) {
		t.Fatalf("a run without its input: %v", err)
	}
	if _, err := tg.LoadModel("/nonexistent.onnx"); !errors.Is(err, tg.ErrIO) {
		t.Fatalf("a missing file: %v", err)
	}
}

// TestMLP runs examples/mlp and compares its output with the C program's (examples/c/mlp_sgd.c).
func TestMLP(t *testing.T) {
	defer guard(t)
	build := os.Getenv("TINYGRAD_BUILD")
	if build == "" {
		build = must(filepath.Abs("../../build"))
	}
	want := must(exec.Command(filepath.Join(build, "example_mlp_sgd")).Output())
	cmd := exec.Command("go", "run", "./examples/mlp")
	cmd.Stderr = os.Stderr
	got := must(cmd.Output())
	if string(got) != string(want) {
		t.Fatalf("Go output:\n%s\nC output:\n%s", got, want)
	}
	if lines := strings.Split(string(got), "\n"); len(lines) != 23 || !strings.HasPrefix(lines[0], "step 1 loss ") {
		t.Fatalf("unexpected output %q", got)
	}
}

// tinyLlm writes tests/bindings/llm_ids.py's tiny model (2 layers, Q8_0, a SentencePiece vocabulary) into dir.
func tinyLlm(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "m.gguf")
	py := os.Getenv("PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	cmd := exec.Command(py, must(filepath.Abs("../../tests/bindings/llm_ids.py")), "write", path)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("writing the model: %v", err)
	}
	return path
}

// TestLlm: Generate against a loop of EvalIDs and greedy Sample, stopping from the callback, a panic in it, the
// tokenizer's round trip, and errors.
func TestLlm(t *testing.T) {
	defer guard(t)
	m := must(tg.LoadLlm(tinyLlm(t), "", 0))
	defer m.Close()
	prompt := must(m.TokenizeIDs("Once upon a time", true, false))
	// SentencePiece's space prefix stays, as llama.cpp's llama_detokenize keeps it
	if text := must(m.DetokenizeIDs(prompt, true, false)); text != " Once upon a time" {
		t.Fatalf("round trip: %q", text)
	}
	greedy := tg.GreedySampling()
	var pieces []string
	got := must(m.Generate(prompt, 12, &greedy, func(_ int32, piece string) bool { pieces = append(pieces, piece); return false }))
	if len(got) != 12 || len(pieces) != 12 {
		t.Fatalf("generated %d tokens, %d pieces", len(got), len(pieces))
	}
	must(0, m.Reset())
	var want []int32
	logits := must(m.EvalIDs(prompt))
	for len(want) < 12 {
		tok := must(m.Sample(logits, nil, &greedy))
		logits.Close()
		want = append(want, int32(tok))
		logits = must(m.EvalIDs([]int32{int32(tok)}))
	}
	logits.Close()
	eq(t, got, want)
	if text := must(m.DetokenizeIDs(got, false, false)); text != strings.Join(pieces, "") {
		t.Fatalf("pieces %q, detokenized %q", strings.Join(pieces, ""), text)
	}

	must(0, m.Reset())
	n := 0
	if stopped := must(m.Generate(prompt, 12, &greedy, func(int32, string) bool { n++; return n == 3 })); len(stopped) != 3 {
		t.Fatalf("stopped after %d tokens, not 3", len(stopped))
	}
	must(0, m.Reset())
	func() {
		defer func() {
			if r := recover(); r != "from the callback" {
				t.Fatalf("recovered %v", r)
			}
		}()
		m.Generate(prompt, 12, &greedy, func(int32, string) bool { panic("from the callback") })
		t.Fatal("the callback's panic was not raised")
	}()
	must(0, m.Reset())
	if again := must(m.Generate(prompt, 12, &greedy, nil)); fmt.Sprint(again) != fmt.Sprint(want) {
		t.Fatalf("after a panic: %v, want %v", again, want)
	}
	if _, err := m.EvalIDs([]int32{1 << 30}); !errors.Is(err, tg.ErrInvalidArgument) {
		t.Fatalf("a token outside the vocabulary: %v", err)
	}
	if _, err := tg.LoadLlm("/nonexistent.gguf", "", 0); !errors.Is(err, tg.ErrIO) {
		t.Fatalf("a missing file: %v", err)
	}
}
