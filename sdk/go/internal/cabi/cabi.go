//go:build wasip1

package cabi

import (
	"runtime/debug"
	"unsafe"

	"syncweave.dev/sdk/go/internal/abi"
)

// Linear-memory addresses fit in 32 bits; Go's wasm port has 64-bit
// pointers, so every address crossing the boundary is a uint32.

// earlyArena serves allocations made before the Go runtime can allocate.
//
// The WASI preview1 adapter allocates its shadow stack (64 KiB) and its
// state through the main module's cabi_realloc the first time Go calls a
// WASI function, which happens inside runtime initialisation (schedinit
// reads the clock and random bytes), before the Go heap exists. The
// adapter's allocations live forever, so a bump allocator over a static
// array is enough. It must not be memory.grow: Go's sbrk assumes it owns
// all growth of linear memory and would hand the adapter's pages to the
// heap.
var earlyArena [256 << 10 / 8]uint64 // 256 KiB, 8-byte aligned
var earlyUsed uintptr

// ready is set by this package's init, once the heap and the pinned map
// exist.
var ready bool

// pinned keeps every live cabi_realloc allocation reachable so that the
// (non-moving) GC does not free it while the host or the adapter uses it.
var pinned map[uintptr][]uint64

// gcPercent is the GOGC value in force while an export runs.
var gcPercent = 100

func init() {
	pinned = make(map[uintptr][]uint64)
	ready = true
	if gcToggle {
		if p := debug.SetGCPercent(-1); p > 0 {
			gcPercent = p
		}
	}
}

// Enter must be the first thing every export does: the GC runs while the
// plugin's code does.
func Enter() {
	if gcToggle {
		debug.SetGCPercent(gcPercent)
	}
}

// Leave must run (deferred) when every export returns.
func Leave() {
	if gcToggle {
		debug.SetGCPercent(-1)
	}
}

// Around runs an import call with the GC off (the host may allocate its
// results through cabi_realloc).
func Around(call func()) {
	if gcToggle {
		debug.SetGCPercent(-1)
		defer debug.SetGCPercent(gcPercent)
	}
	call()
}

func addr(p unsafe.Pointer) uint32 { return uint32(uintptr(p)) }

func at(ptr uint32) unsafe.Pointer { return unsafe.Add(unsafe.Pointer(nil), uintptr(ptr)) }

var zero uint64

//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	if !ready {
		return earlyAlloc(oldPtr, oldSize, align, newSize)
	}
	return heapAlloc(oldPtr, oldSize, align, newSize)
}

func earlyAlloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	if align == 0 {
		align = 1
	}
	base := uintptr(unsafe.Pointer(&earlyArena[0]))
	p := (base + earlyUsed + uintptr(align) - 1) &^ (uintptr(align) - 1)
	end := p + uintptr(newSize)
	if end > base+uintptr(len(earlyArena))*8 {
		return 0 // the adapter traps on a null allocation
	}
	if oldPtr != 0 && oldSize != 0 {
		n := min(oldSize, newSize)
		copy(unsafe.Slice((*byte)(at(uint32(p))), n), unsafe.Slice((*byte)(at(oldPtr)), n))
	}
	earlyUsed = end - base
	return uint32(p)
}

func heapAlloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	if newSize == 0 {
		if oldPtr != 0 {
			delete(pinned, uintptr(oldPtr))
		}
		return addr(unsafe.Pointer(&zero))
	}
	// []uint64 is 8-aligned and holds no pointers (the GC never scans it).
	words := (uintptr(newSize) + 7) / 8
	extra := uintptr(0)
	if align > 8 {
		extra = (uintptr(align) + 7) / 8
	}
	buf := make([]uint64, words+extra)
	p := uintptr(unsafe.Pointer(&buf[0]))
	if align > 8 {
		p = (p + uintptr(align) - 1) &^ (uintptr(align) - 1)
	}
	if oldPtr != 0 {
		if _, ok := pinned[uintptr(oldPtr)]; ok {
			n := min(oldSize, newSize)
			copy(unsafe.Slice((*byte)(at(uint32(p))), n), unsafe.Slice((*byte)(at(oldPtr)), n))
			delete(pinned, uintptr(oldPtr))
		}
	}
	pinned[p] = buf
	return uint32(p)
}

// Mem is the module's linear memory.
var Mem abi.Memory = memory{}

// keep holds everything a lowered result points into until post-return.
var keep []any

type memory struct{}

func (memory) Bytes(ptr, n uint32) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(at(ptr)), n)
}

func (memory) Free(ptr uint32) { delete(pinned, uintptr(ptr)) }

func (memory) Alloc(n uint32) (uint32, []byte) {
	buf := make([]uint64, max((n+7)/8, 1))
	keep = append(keep, buf)
	return addr(unsafe.Pointer(&buf[0])), unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), n)
}

func (memory) String(s string) (uint32, uint32) {
	if len(s) == 0 {
		return 1, 0
	}
	keep = append(keep, s)
	return addr(unsafe.Pointer(unsafe.StringData(s))), uint32(len(s))
}

func (memory) Release() {
	clear(keep)
	keep = keep[:0]
}

// Stats reports the bytes handed out from the early arena and the live
// cabi_realloc allocations (diagnostics).
func Stats() (earlyArenaBytes uintptr, liveAllocations int) { return earlyUsed, len(pinned) }
