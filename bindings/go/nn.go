package tinygrad

// Parameters are new references to m's trainable tensors, in tinygrad's order.
func (m *Module) Parameters() ([]*Tensor, error) {
	n, err := m.ParameterCount()
	if err != nil {
		return nil, err
	}
	return m.parameters(n)
}

// ScheduleStep assigns one optimizer step, lazily, and returns the tensors to realize (with the loss, in one
// RealizeMany); close them after.
func (opt *Optimizer) ScheduleStep() ([]*Tensor, error) {
	n, _, err := opt.scheduleStep(0) // out NULL: the count only, nothing assigned
	if err != nil {
		return nil, err
	}
	_, out, err := opt.scheduleStep(int(n))
	return out, err
}

// Params are new references to the tensors the optimizer updates.
func (opt *Optimizer) Params() ([]*Tensor, error) {
	n, _, err := opt.params(0)
	if err != nil {
		return nil, err
	}
	_, out, err := opt.params(int(n))
	return out, err
}

// Info is the dtype and shape of the entry `name`, without realizing it.
func (s *State) Info(name string) (DType, []int64, error) {
	_, _, ndim, err := s.info(name, 0)
	if err != nil {
		return 0, nil, err
	}
	dt, shape, _, err := s.info(name, int(ndim))
	return dt, shape, err
}
