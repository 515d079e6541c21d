package abi

import "fmt"

// Fake is a linear memory for native tests of the glue: one fixed buffer
// (so views stay valid), addresses are offsets into it. It records what
// the "host" allocated (HostAlloc, as cabi_realloc would) and what the
// glue freed, so tests can check that every argument is freed.
type Fake struct {
	buf       []byte
	host      map[uint32]bool
	Freed     map[uint32]bool
	Released  int
	kept      int
	lastAlloc uint32
}

// NewFake is a fake memory of 4 MiB.
func NewFake() *Fake {
	return &Fake{buf: make([]byte, 16, 4<<20), host: map[uint32]bool{}, Freed: map[uint32]bool{}}
}

func (f *Fake) alloc(n uint32) (uint32, []byte) {
	for len(f.buf)%8 != 0 {
		f.buf = append(f.buf, 0)
	}
	if uint32(len(f.buf))+n > uint32(cap(f.buf)) {
		panic("abi.Fake: out of memory")
	}
	p := uint32(len(f.buf))
	f.buf = f.buf[:len(f.buf)+int(n)]
	clear(f.buf[p:])
	return p, f.buf[p : p+n : p+n]
}

func (f *Fake) Bytes(ptr, n uint32) []byte {
	if uint64(ptr)+uint64(n) > uint64(len(f.buf)) {
		panic(fmt.Sprintf("abi.Fake: read of %d bytes at %d is out of bounds (%d)", n, ptr, len(f.buf)))
	}
	return f.buf[ptr : ptr+n : ptr+n]
}

func (f *Fake) Free(ptr uint32) {
	if f.host[ptr] {
		f.Freed[ptr] = true
	}
}

func (f *Fake) Alloc(n uint32) (uint32, []byte) {
	f.kept++
	p, b := f.alloc(n)
	f.lastAlloc = p
	return p, b
}

func (f *Fake) String(s string) (uint32, uint32) {
	if s == "" {
		return 1, 0
	}
	f.kept++
	p, b := f.alloc(uint32(len(s)))
	copy(b, s)
	return p, uint32(len(s))
}

func (f *Fake) Release() { f.Released++; f.kept = 0 }

// HostAlloc is an allocation the host makes through cabi_realloc (the
// glue must Free it after lifting).
func (f *Fake) HostAlloc(n uint32) (uint32, []byte) {
	p, b := f.alloc(n)
	f.host[p] = true
	return p, b
}

// HostString lowers a string as the host does: memory from HostAlloc.
func (f *Fake) HostString(s string) (uint32, uint32) {
	p, b := f.HostAlloc(uint32(len(s)))
	copy(b, s)
	return p, uint32(len(s))
}

// Unfreed lists host allocations the glue did not free.
func (f *Fake) Unfreed() []uint32 {
	var out []uint32
	for p := range f.host {
		if !f.Freed[p] {
			out = append(out, p)
		}
	}
	return out
}
