package plugin

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
)

// ErrorKind is the case of the contract's plugin-error variant.
type ErrorKind uint8

const (
	// InvalidConfig: the plugin's config is unusable; the user must fix it.
	InvalidConfig ErrorKind = iota
	// InvalidInput: the input object does not have the shape the plugin needs.
	InvalidInput
	// Rejected: the plugin deliberately refuses this object (a policy decision).
	Rejected
	// Internal: a bug or an unexpected condition inside the plugin.
	Internal
)

func (k ErrorKind) String() string {
	switch k {
	case InvalidConfig:
		return "invalid-config"
	case InvalidInput:
		return "invalid-input"
	case Rejected:
		return "rejected"
	case Internal:
		return "internal"
	}
	return fmt.Sprintf("error-kind(%d)", uint8(k))
}

// Error is a typed plugin failure. Role functions may return any error:
// an *Error (also wrapped, see [errors.As]) keeps its kind, a *[ReadError]
// becomes invalid-config or internal (see [KindOf]), and anything else is
// reported as internal.
type Error struct {
	Kind    ErrorKind
	Message string
	// Err is the wrapped cause, if any (Errorf with %w).
	Err error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// Errorf makes an *Error of kind; %w wraps a cause as fmt.Errorf does.
//
//	return plugin.Errorf(plugin.InvalidInput, "spec.image %q has no tag", image)
func Errorf(kind ErrorKind, format string, args ...any) *Error {
	wrapped := fmt.Errorf(format, args...)
	return &Error{Kind: kind, Message: wrapped.Error(), Err: errors.Unwrap(wrapped)}
}

// KindOf is the plugin-error kind the host sees for err: the kind of the
// first *Error in its chain; for a *ReadError, invalid-config when the read
// is not allowed or not served (the operator or the plugin's declarations
// must change) and internal otherwise; internal for anything else.
func KindOf(err error) ErrorKind {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Kind
	}
	var re *ReadError
	if errors.As(err, &re) {
		switch re.Kind {
		case ReadNotAllowed, ReadNotServed:
			return InvalidConfig
		}
	}
	return Internal
}

// Guard runs f and turns a panic into an internal error that names the
// panic and where it happened, so that a bug fails one call instead of
// killing the instance. The SDK runs every plugin function under Guard.
func Guard(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			msg := fmt.Sprintf("panic: %v", p)
			if at := panicSite(); at != "" {
				msg += " (at " + at + ")"
			}
			err = &Error{Kind: Internal, Message: msg}
		}
	}()
	return f()
}

// panicSite is "file:line in function" of the frame that panicked: the
// first frame after runtime.gopanic that is not in the runtime.
func panicSite() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	seenPanic := false
	for {
		f, more := frames.Next()
		if f.Function == "runtime.gopanic" {
			seenPanic = true
		} else if seenPanic && !strings.HasPrefix(f.Function, "runtime.") {
			fn := f.Function
			if i := strings.LastIndex(fn, "/"); i >= 0 {
				fn = fn[i+1:]
			}
			return fmt.Sprintf("%s:%d in %s", shortFile(f.File), f.Line, fn)
		}
		if !more {
			return ""
		}
	}
}

func shortFile(path string) string {
	parts := strings.Split(path, "/")
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	return strings.Join(parts, "/")
}
