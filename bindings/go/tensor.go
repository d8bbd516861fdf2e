package tinygrad

import (
	"fmt"
	"unsafe"
)

// Elem is a Go element type with a tinygrad dtype of the same size and layout.
type Elem interface {
	bool | int8 | uint8 | int16 | uint16 | int32 | uint32 | int64 | uint64 | float32 | float64
}

// DTypeOf is the dtype whose elements are laid out as T's.
func DTypeOf[T Elem]() DType {
	var z T
	switch any(z).(type) {
	case bool:
		return Bool
	case int8:
		return Int8
	case uint8:
		return Uint8
	case int16:
		return Int16
	case uint16:
		return Uint16
	case int32:
		return Int32
	case uint32:
		return Uint32
	case int64:
		return Int64
	case uint64:
		return Uint64
	case float32:
		return Float32
	}
	return Float64
}

func (d DType) String() string {
	if n, err := d.Name(); err == nil {
		return n
	}
	return fmt.Sprintf("DType(%d)", int32(d))
}

// asBytes views a slice's memory as bytes (no copy): the library copies what it keeps.
func asBytes[T Elem](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// FromSlice is a tensor of the given shape holding a copy of data, with T's dtype, on device ("" for the default).
func FromSlice[T Elem](data []T, shape []int64, device string) (*Tensor, error) {
	return FromData(asBytes(data), DTypeOf[T](), shape, device)
}

// ToSlice realizes t and copies its elements out; T must match t's dtype.
func ToSlice[T Elem](t *Tensor) ([]T, error) {
	dt, err := t.DType()
	if err != nil {
		return nil, err
	}
	if want := DTypeOf[T](); dt != want {
		return nil, newErrorf(ErrDType, "ToSlice: the tensor is %v, the slice %v", dt, want)
	}
	n, err := t.Numel()
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	return out, t.ToData(asBytes(out))
}

// Item is the value of a one-element tensor.
func Item[T Elem](t *Tensor) (T, error) {
	var z T
	v, err := ToSlice[T](t)
	if err != nil {
		return z, err
	}
	if len(v) != 1 {
		return z, newErrorf(ErrShape, "Item: the tensor has %d elements, not 1", len(v))
	}
	return v[0], nil
}

// Shape is t's shape.
func (t *Tensor) Shape() ([]int64, error) {
	n, err := t.Ndim()
	if err != nil {
		return nil, err
	}
	return t.shape(int(n))
}

// Chunk splits t into at most `chunks` pieces along dim (tinygrad's chunk).
func (t *Tensor) Chunk(chunks, dim int64) ([]*Tensor, error) {
	if chunks < 0 {
		return nil, newErrorf(ErrInvalidArgument, "Chunk: negative chunks %d", chunks)
	}
	_, out, err := t.chunk(chunks, dim, int(chunks))
	return out, err
}

// Index entries for Getitem / Setitem: t[1, 2:8:2, None, ..., idx] is
// t.Getitem([]Index{At(1), Range(2, 8, 2), NewAxis(), Ellipsis(), Take(idx)}).

// At is an integer index (negative counts from the end).
func At(i int64) Index { return Index{Kind: IndexKindInt, Start: i} }

// Range is the slice start:stop:step.
func Range(start, stop, step int64) Index {
	return Index{Kind: IndexKindSlice, Start: start, Stop: stop, Step: step, HasStart: 1, HasStop: 1, HasStep: 1}
}

// All is the full slice ":".
func All() Index { return Index{Kind: IndexKindSlice} }

// NewAxis is None: a new size-1 dim.
func NewAxis() Index { return Index{Kind: IndexKindNewAxis} }

// Ellipsis is "...".
func Ellipsis() Index { return Index{Kind: IndexKindEllipsis} }

// Take is an integer tensor index (numpy's advanced indexing); idx is borrowed for the call.
func Take(idx *Tensor) Index { return Index{Kind: IndexKindTensor, Tensor: idx} }
