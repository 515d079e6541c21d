// Package abi lifts the arguments and lowers the results of the plugin
// contract's functions in the component model's canonical ABI, for both
// contract versions. It works on a [Memory], so that the layouts can be
// tested natively on a fake linear memory; in a component the memory is
// the module's own (internal/cabi).
//
// Offsets are those of the canonical ABI for wasm32 (strings and lists are
// a 4-byte pointer and a 4-byte length, enums and variant discriminants one
// byte, payloads aligned to 4); layout_test.go derives every one of them
// from the WIT types.
package abi

import "encoding/binary"

// Memory is a component's linear memory as the glue sees it.
type Memory interface {
	// Bytes is a view of n bytes at ptr (for lifting).
	Bytes(ptr, n uint32) []byte
	// Free releases memory the host allocated with cabi_realloc, once its
	// content is lifted (the callee owns its arguments).
	Free(ptr uint32)
	// Alloc returns n zeroed bytes, 8-aligned, kept until Release.
	Alloc(n uint32) (uint32, []byte)
	// String lowers s, kept until Release.
	String(s string) (uint32, uint32)
	// Release drops what Alloc and String kept: the post-return function
	// of an export.
	Release()
}

// emptyList is the pointer of an empty list: the canonical ABI checks a
// list pointer's alignment even when the list is empty.
const emptyList = 8

func put32(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }

func get32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

func putString(m Memory, b []byte, off int, s string) {
	p, n := m.String(s)
	put32(b, off, p)
	put32(b, off+4, n)
}

// putOptString stores option<string>: discriminant byte, then the string
// at off+4.
func putOptString(m Memory, b []byte, off int, s string, present bool) {
	if !present {
		b[off] = 0
		return
	}
	b[off] = 1
	putString(m, b, off+4, s)
}

// putList stores list<T> at off: it allocates n elements of size bytes and
// has fill write element i.
func putList(m Memory, b []byte, off int, n, size int, fill func(i int, e []byte)) {
	if n == 0 {
		put32(b, off, emptyList)
		put32(b, off+4, 0)
		return
	}
	p, arr := m.Alloc(uint32(n * size))
	for i := 0; i < n; i++ {
		fill(i, arr[i*size:(i+1)*size])
	}
	put32(b, off, p)
	put32(b, off+4, uint32(n))
}

func putStrings(m Memory, b []byte, off int, list []string) {
	putList(m, b, off, len(list), 8, func(i int, e []byte) { putString(m, e, 0, list[i]) })
}

// liftString copies a string the host lowered and frees its memory.
func liftString(m Memory, ptr, n uint32) string {
	var s string
	if n > 0 {
		s = string(m.Bytes(ptr, n))
	}
	m.Free(ptr)
	return s
}

func liftOptString(m Memory, disc, ptr, n uint32) (string, bool) {
	if disc == 0 {
		return "", false
	}
	return liftString(m, ptr, n), true
}

// loadString lifts the string stored at off of b.
func loadString(m Memory, b []byte, off int) string {
	return liftString(m, get32(b, off), get32(b, off+4))
}

// loadList calls each for every element of the list<T> stored at off of b
// (elements of size bytes), then frees the list's memory.
func loadList(m Memory, b []byte, off int, size int, each func(e []byte)) {
	p, n := get32(b, off), get32(b, off+4)
	if n > 0 {
		arr := m.Bytes(p, n*uint32(size))
		for i := 0; i < int(n); i++ {
			each(arr[i*size : (i+1)*size])
		}
	}
	m.Free(p)
}
