package tinygrad

import (
	"errors"
	"fmt"
)

// Error is a failure reported by the library: the status code, its name ("TG_ERROR_SHAPE") and the library's message.
// errors.Is(err, ErrShape) matches it by status.
type Error struct {
	Status  Status
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Is reports whether target is this error's Status, or an *Error with the same Status.
func (e *Error) Is(target error) bool {
	var t *Error
	if s, ok := target.(Status); ok {
		return s == e.Status
	}
	return errors.As(target, &t) && t.Status == e.Status
}

// Error makes a Status usable as a sentinel: errors.Is(err, tinygrad.ErrShape).
func (s Status) Error() string { return s.Name() }

func (s Status) String() string { return s.Name() }

func newError(s Status, msg string) *Error { return &Error{Status: s, Code: s.Name(), Message: msg} }

func newErrorf(s Status, format string, args ...any) *Error {
	return newError(s, fmt.Sprintf(format, args...))
}
