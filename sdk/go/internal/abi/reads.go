package abi

import "syncweave.dev/sdk/go/plugin"

// ReadsImport is the contract 0.2 `reads` interface as core functions: the
// flat parameters (12 for get, 13 for list) and the address of a result area
// the host writes into.
type ReadsImport struct {
	Get  func(p []uint32, ret uint32)
	List func(p []uint32, ret uint32)
	// Around wraps each import call (the component turns the garbage
	// collector off for it: the host allocates the result through
	// cabi_realloc, where a collection must not start).
	Around func(call func())
}

// NewReader is a plugin.Reader that calls the host's reads import.
func NewReader(m Memory, imp ReadsImport) plugin.Reader { return &hostReader{m, imp} }

type hostReader struct {
	m   Memory
	imp ReadsImport
}

func (r *hostReader) flatRequest(side plugin.Side, res plugin.Resource, namespace string) []uint32 {
	p := make([]uint32, 0, flatReadsLst)
	p = append(p, uint32(side))
	for _, s := range []string{res.Group, res.Version, res.Resource} {
		ptr, n := r.m.String(s)
		p = append(p, ptr, n)
	}
	return append(p, r.optString(namespace)...)
}

func (r *hostReader) optString(s string) []uint32 {
	if s == "" {
		return []uint32{0, 0, 0}
	}
	ptr, n := r.m.String(s)
	return []uint32{1, ptr, n}
}

func (r *hostReader) call(f func([]uint32, uint32), p []uint32, ret uint32) {
	if r.imp.Around != nil {
		r.imp.Around(func() { f(p, ret) })
	} else {
		f(p, ret)
	}
}

func (r *hostReader) readError(b []byte) error {
	return &plugin.ReadError{
		Kind:    plugin.ReadErrorKind(b[resPayload+errCase]),
		Message: loadString(r.m, b, resPayload+errMsg),
	}
}

func (r *hostReader) Get(side plugin.Side, res plugin.Resource, namespace, name string) (string, bool, error) {
	p := r.flatRequest(side, res, namespace)
	ptr, n := r.m.String(name)
	p = append(p, ptr, n)
	ret, _ := r.m.Alloc(rgSize)
	r.call(r.imp.Get, p, ret)
	b := r.m.Bytes(ret, rgSize)
	if b[resDisc] != 0 {
		return "", false, r.readError(b)
	}
	if b[rgOptDisc] == 0 {
		return "", false, nil
	}
	return loadString(r.m, b, rgOptString), true, nil
}

func (r *hostReader) List(side plugin.Side, res plugin.Resource, namespace, selector string) ([]string, error) {
	p := r.flatRequest(side, res, namespace)
	p = append(p, r.optString(selector)...)
	ret, _ := r.m.Alloc(rlSize)
	r.call(r.imp.List, p, ret)
	b := r.m.Bytes(ret, rlSize)
	if b[resDisc] != 0 {
		return nil, r.readError(b)
	}
	var out []string
	loadList(r.m, b, rlList, strSize, func(e []byte) { out = append(out, loadString(r.m, e, 0)) })
	return out, nil
}
