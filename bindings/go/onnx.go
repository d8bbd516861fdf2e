package tinygrad

// Model is an ONNX model loaded for running (docs/onnx.md): LoadModel, then Run.
type Model = OnnxModel

// LoadModel loads the ONNX model at path for the default device (OnnxLoad with options for others).
func LoadModel(path string) (*Model, error) { return OnnxLoad(path, nil) }

// Inputs are the names of the inputs Run takes, in order.
func (m *Model) Inputs() ([]string, error) { return m.names(m.OnnxInputCount, m.OnnxInputName) }

// Outputs are the names of the outputs Run gives, in order.
func (m *Model) Outputs() ([]string, error) { return m.names(m.OnnxOutputCount, m.OnnxOutputName) }

func (m *Model) names(count func() (int64, error), name func(int) (string, error)) ([]string, error) {
	n, err := count()
	if err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		if out[i], err = name(i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Run runs the model on inputs (in Inputs' order) and returns new references to its outputs; repeated runs with the
// same shapes replay the captured kernels.
func (m *Model) Run(inputs ...*Tensor) ([]*Tensor, error) {
	n, err := m.OnnxOutputCount()
	if err != nil {
		return nil, err
	}
	return m.OnnxRun(inputs, int(n))
}
