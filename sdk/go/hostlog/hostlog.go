// Package hostlog sends log lines to the syncweave host, which puts them in
// its structured log with the plugin's name attached (bounded and
// rate-limited). In native builds (go test) lines go to stderr and are
// captured for [TakeCaptured].
//
//	hostlog.Debugf("set %d labels on %s", len(labels), obj.Name())
package hostlog

import (
	"fmt"
	"os"
	"sync"

	"syncweave.dev/sdk/go/internal/sink"
)

// Level is the contract's host-log level.
type Level uint32

const (
	LevelTrace Level = iota
	LevelDebug
	LevelInfo
	LevelWarn
	LevelError
)

func (l Level) String() string {
	switch l {
	case LevelTrace:
		return "trace"
	case LevelDebug:
		return "debug"
	case LevelInfo:
		return "info"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	}
	return fmt.Sprintf("level(%d)", uint32(l))
}

// Line is one captured log line.
type Line struct {
	Level   Level
	Message string
}

var (
	mu       sync.Mutex
	captured []Line
	// Quiet stops native builds from printing lines on stderr (they are
	// still captured).
	Quiet bool
)

// Log sends one line at level.
func Log(level Level, message string) {
	if sink.Log != nil {
		sink.Log(uint32(level), message)
		return
	}
	mu.Lock()
	captured = append(captured, Line{level, message})
	quiet := Quiet
	mu.Unlock()
	if !quiet {
		fmt.Fprintf(os.Stderr, "[plugin %s] %s\n", level, message)
	}
}

// Logf formats and sends one line at level.
func Logf(level Level, format string, args ...any) { Log(level, fmt.Sprintf(format, args...)) }

// TakeCaptured returns the lines logged so far in a native build and
// forgets them (always empty inside a component).
func TakeCaptured() []Line {
	mu.Lock()
	defer mu.Unlock()
	out := captured
	captured = nil
	return out
}

func Trace(message string)              { Log(LevelTrace, message) }
func Tracef(format string, args ...any) { Logf(LevelTrace, format, args...) }
func Debug(message string)              { Log(LevelDebug, message) }
func Debugf(format string, args ...any) { Logf(LevelDebug, format, args...) }
func Info(message string)               { Log(LevelInfo, message) }
func Infof(format string, args ...any)  { Logf(LevelInfo, format, args...) }
func Warn(message string)               { Log(LevelWarn, message) }
func Warnf(format string, args ...any)  { Logf(LevelWarn, format, args...) }
func Error(message string)              { Log(LevelError, message) }
func Errorf(format string, args ...any) { Logf(LevelError, format, args...) }
