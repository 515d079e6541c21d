//go:build wasip1 && syncweave_nogctoggle

package cabi

// Build with -tags syncweave_nogctoggle to see what goes wrong without the
// GC switch: cabi_realloc traps with "cannot leave component instance"
// once a collection starts inside it.
const gcToggle = false
