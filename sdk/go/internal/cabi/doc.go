// Package cabi is the canonical-ABI glue between Go (GOOS=wasip1,
// GOARCH=wasm, -buildmode=c-shared) and the component model: the
// cabi_realloc export, the linear memory the abi package lowers into, and
// the garbage collector's switch between calls. Everything is in
// wasip1-only files; native builds see this file alone.
//
// Why the garbage collector is off between calls: the host calls
// cabi_realloc (to lower an export's arguments, or an import's results) and
// the cabi_post_* functions with the component instance's may_leave flag
// clear, so any import they reach traps with "cannot leave component
// instance". A Go heap allocation can start a GC cycle or assist one in
// flight, and the GC reads clocks through WASI imports. So outside export
// calls, and around import calls whose results the host allocates, the GC
// is off with no cycle running: [Leave] turns it off (SetGCPercent(-1)
// returns once any mark phase in flight has finished); [Enter] turns it
// back on for the plugin's code. A memory limit (debug.SetMemoryLimit)
// would make the GC run even then, so plugins must not set one.
package cabi
