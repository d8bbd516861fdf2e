// mlp is examples/c/mlp_sgd.c through the Go binding: 20 SGD steps of a 2-layer MLP, printing each loss's bits, then a
// shape error, then the live handle count. Its output matches the C program's byte for byte.
package main

import (
	"errors"
	"fmt"
	"math"
	"os"

	tg "libtinygrad.org/tinygrad"
)

const n, in, hid, out, steps = 32, 8, 16, 4, 20

func train() error {
	xs, ys := make([]float32, n*in), make([]int32, n)
	for i := 0; i < n; i++ {
		for j := 0; j < in; j++ {
			xs[i*in+j] = float32(float64((7*i+3*j)%11-5) / 5.0)
		}
		ys[i] = int32((7 * i % 11) % 4)
	}
	x, err := tg.FromSlice(xs, []int64{n, in}, "")
	if err != nil {
		return err
	}
	defer x.Close()
	y, err := tg.FromSlice(ys, []int64{n}, "")
	if err != nil {
		return err
	}
	defer y.Close()

	l1, err := tg.NNLinear(in, hid, true, "")
	if err != nil {
		return err
	}
	defer l1.Close()
	relu, err := tg.NNFunction("relu")
	if err != nil {
		return err
	}
	defer relu.Close()
	l2, err := tg.NNLinear(hid, out, true, "")
	if err != nil {
		return err
	}
	defer l2.Close()
	model, err := tg.NNSequential([]*tg.Module{l1, relu, l2})
	if err != nil {
		return err
	}
	defer model.Close()

	params, err := model.Parameters()
	if err != nil {
		return err
	}
	o, err := tg.OptimizerOptionsDefault(tg.OptimizerKindSGD)
	if err != nil {
		return err
	}
	o.LR = 0.1
	opt, err := tg.OptimSGD(params, &o)
	for _, p := range params {
		p.Close()
	}
	if err != nil {
		return err
	}
	defer opt.Close()

	for step := 1; step <= steps; step++ {
		if err := opt.ZeroGrad(); err != nil {
			return err
		}
		loss, err := trainStep(model, opt, x, y)
		if err != nil {
			return err
		}
		fmt.Printf("step %d loss %08x %.6f\n", step, math.Float32bits(loss), float64(loss))
	}
	return nil
}

// trainStep runs forward, backward and the optimizer's assigns (realized with the loss), and returns the loss.
func trainStep(model *tg.Module, opt *tg.Optimizer, x, y *tg.Tensor) (float32, error) {
	logits, err := model.Call(x)
	if err != nil {
		return 0, err
	}
	defer logits.Close()
	loss, err := logits.SparseCategoricalCrossentropy(y, -1, 0.0, 1)
	if err != nil {
		return 0, err
	}
	defer loss.Close()
	if err := loss.Backward(); err != nil {
		return 0, err
	}
	upd, err := opt.ScheduleStep()
	if err != nil {
		return 0, err
	}
	defer func() {
		for _, t := range upd {
			t.Close()
		}
	}()
	if err := tg.RealizeMany(append([]*tg.Tensor{loss}, upd...)); err != nil {
		return 0, err
	}
	return tg.Item[float32](loss)
}

func badMatmul() error {
	a, err := tg.Zeros([]int64{2, 3}, tg.Float32, "")
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := tg.Zeros([]int64{4, 5}, tg.Float32, "")
	if err != nil {
		return err
	}
	defer b.Close()
	c, err := a.Matmul(b)
	var e *tg.Error
	if !errors.As(err, &e) {
		c.Close()
		return fmt.Errorf("the bad matmul did not fail with a library error (got %v)", err)
	}
	fmt.Printf("error %s: %s\n", e.Code, e.Message)
	return nil
}

func main() {
	tg.ManualSeed(1337)
	err := tg.SetOption("TRAINING", "1")
	if err == nil {
		err = train()
	}
	if err == nil {
		err = badMatmul()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mlp:", err)
		os.Exit(1)
	}
	fmt.Printf("live handles: %d\n", tg.LiveHandles())
}
