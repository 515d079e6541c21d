package abi

import (
	"errors"
	"reflect"
	"testing"

	"syncweave.dev/sdk/go/plugin"
)

// The host side of the canonical ABI, for tests: it lowers arguments into
// memory it allocates (as wasmtime does through cabi_realloc) and lifts
// results, at offsets computed from the WIT types (layout_test.go).
type host struct {
	t *testing.T
	m *Fake
}

func newHost(t *testing.T) *host { return &host{t, NewFake()} }

func (h *host) str(s string) (uint32, uint32) { return h.m.HostString(s) }

func (h *host) putStr(b []byte, off int, s string) {
	p, n := h.str(s)
	put32(b, off, p)
	put32(b, off+4, n)
}

// getStr reads a string the guest lowered.
func (h *host) getStr(b []byte, off int) string {
	return string(h.m.Bytes(get32(b, off), get32(b, off+4)))
}

func (h *host) getList(b []byte, off int, elem ty) [][]byte {
	p, n := get32(b, off), get32(b, off+4)
	if p%4 != 0 {
		h.t.Errorf("a list pointer (%d) must be aligned to 4, even when the list is empty", p)
	}
	var out [][]byte
	for i := 0; i < int(n); i++ {
		out = append(out, h.m.Bytes(p+uint32(i*elem.size), uint32(elem.size)))
	}
	return out
}

func (h *host) getStrings(b []byte, off int) []string {
	var out []string
	for _, e := range h.getList(b, off, tStr) {
		out = append(out, h.getStr(e, 0))
	}
	return out
}

func (h *host) result(ptr uint32, t ty) []byte { return h.m.Bytes(ptr, uint32(t.size)) }

func (h *host) checkFreed() {
	h.t.Helper()
	if un := h.m.Unfreed(); len(un) > 0 {
		h.t.Errorf("the guest did not free %d argument allocations (%v)", len(un), un)
	}
}

// ctxFlat lowers a context to its flat values (0.2 with values).
func (h *host) ctxFlat(ctx *plugin.Context, v02 bool) []uint32 {
	np, nl := h.str(ctx.ClusterName)
	out := []uint32{np, nl}
	if ctx.ClusterPath == "" {
		out = append(out, 0, 0, 0)
	} else {
		pp, pl := h.str(ctx.ClusterPath)
		out = append(out, 1, pp, pl)
	}
	op, ol := h.str(ctx.Owner)
	out = append(out, uint32(ctx.Direction), op, ol)
	if v02 {
		lp, lb := h.m.HostAlloc(uint32(max(1, len(ctx.Values)*wEntry.size)))
		for i, v := range ctx.Values {
			e := lb[i*wEntry.size:]
			h.putStr(e, wEntry.offsets[0], v.Key)
			h.putStr(e, wEntry.offsets[1], v.Value)
		}
		out = append(out, lp, uint32(len(ctx.Values)))
	}
	return out
}

func (h *host) strFlat(s string) []uint32 {
	p, n := h.str(s)
	return []uint32{p, n}
}

type seen struct {
	ctx                             *plugin.Context
	config, object, template, value string
	other                           *string
}

type fake struct {
	info     plugin.Info
	contract plugin.Contract
	got      seen
	err      error
	report   *plugin.Report
}

func (f *fake) Describe() plugin.Info         { return f.info }
func (f *fake) ValidateConfig(c string) error { f.got.config = c; return f.err }
func (f *fake) Contract() plugin.Contract     { return f.contract }
func (f *fake) World() string                 { return "test" }
func (f *fake) MutateJSON(ctx *plugin.Context, config, object string, other *string) (string, *plugin.Report, error) {
	f.got = seen{ctx: ctx, config: config, object: object, other: other}
	return `{"out":1}`, f.report, f.err
}
func (f *fake) NameJSON(ctx *plugin.Context, config, object string) (plugin.ObjectName, *plugin.Report, error) {
	f.got = seen{ctx: ctx, config: config, object: object}
	return plugin.ObjectName{Name: "n", Namespace: "ns"}, f.report, f.err
}
func (f *fake) ProjectJSON(config, crd string) (string, error) {
	f.got = seen{config: config, object: crd}
	return `{"crd":2}`, f.err
}
func (f *fake) RenderJSON(ctx *plugin.Context, config, template, values string) ([]string, *plugin.Report, error) {
	f.got = seen{ctx: ctx, config: config, template: template, value: values}
	return []string{`{"a":1}`, `{"b":2}`}, f.report, f.err
}

var testCtx = &plugin.Context{ClusterName: "2x8f", ClusterPath: "root:org", Direction: plugin.ServiceToKcp, Owner: "owner"}

func sameCtx(t *testing.T, got, want *plugin.Context) {
	t.Helper()
	g, w := *got, *want
	g.Reads, w.Reads = nil, nil
	if !reflect.DeepEqual(g, w) {
		t.Errorf("context lifted as %+v, want %+v", g, w)
	}
}

var testReport = &plugin.Report{
	Results:       []plugin.CallResult{{Severity: plugin.Warning, Reason: "Missing", Message: "m"}, {Severity: plugin.Normal, Reason: "Done", Message: "d"}},
	Conditions:    []plugin.Condition{{Type: "Ready", Status: plugin.ConditionTrue, Reason: "R", Message: "msg"}},
	ContextValues: []plugin.ContextValue{{Key: "k", Value: `"v"`}},
}

func (h *host) checkReport(b []byte, off int) {
	h.t.Helper()
	var got plugin.Report
	for _, e := range h.getList(b, off+wReport.offsets[0], wCallResult) {
		got.Results = append(got.Results, plugin.CallResult{Severity: plugin.Severity(e[0]), Reason: h.getStr(e, wCallResult.offsets[1]), Message: h.getStr(e, wCallResult.offsets[2])})
	}
	for _, e := range h.getList(b, off+wReport.offsets[1], wCondition) {
		got.Conditions = append(got.Conditions, plugin.Condition{Type: h.getStr(e, 0), Status: plugin.ConditionStatus(h.getStr(e, wCondition.offsets[1])), Reason: h.getStr(e, wCondition.offsets[2]), Message: h.getStr(e, wCondition.offsets[3])})
	}
	for _, e := range h.getList(b, off+wReport.offsets[2], wEntry) {
		got.ContextValues = append(got.ContextValues, plugin.ContextValue{Key: h.getStr(e, 0), Value: h.getStr(e, wEntry.offsets[1])})
	}
	if !reflect.DeepEqual(&got, testReport) {
		h.t.Errorf("report lowered as %+v", got)
	}
}

func TestMutate01(t *testing.T) {
	h := newHost(t)
	f := &fake{}
	args := append(h.ctxFlat(testCtx, false), h.strFlat("cfg")...)
	args = append(args, h.strFlat(`{"o":1}`)...)
	op, ol := h.str("other")
	args = append(args, 1, op, ol)
	if len(args) != wMutateParams01.flat {
		t.Fatalf("%d args", len(args))
	}
	r := h.result(Mutate01(h.m, f, args), wResString)
	sameCtx(t, f.got.ctx, testCtx)
	if f.got.config != "cfg" || f.got.object != `{"o":1}` || f.got.other == nil || *f.got.other != "other" {
		t.Errorf("lifted %+v", f.got)
	}
	if r[0] != 0 || h.getStr(r, wResString.payload) != `{"out":1}` {
		t.Errorf("result %v", r)
	}
	h.checkFreed()

	f.err = plugin.Errorf(plugin.Rejected, "no")
	args = append(h.ctxFlat(&plugin.Context{}, false), h.strFlat("")...)
	args = append(args, h.strFlat("{}")...)
	args = append(args, 0, 0, 0)
	r = h.result(Mutate01(h.m, f, args), wResString)
	if f.got.other != nil || f.got.ctx.ClusterPath != "" {
		t.Errorf("absent options: %+v", f.got)
	}
	if r[0] != 1 || r[wResString.payload] != byte(plugin.Rejected) || h.getStr(r, wResString.payload+wPluginError.payload) != "no" {
		t.Errorf("error result %v", r)
	}
	r = h.result(Mutate01(h.m, nil, args), wResString)
	if r[0] != 1 || r[wResString.payload] != byte(plugin.Internal) {
		t.Error("no plugin is an internal error")
	}
	h.checkFreed()
}

func TestName01AndName02(t *testing.T) {
	h := newHost(t)
	f := &fake{report: testReport}
	args := append(h.ctxFlat(testCtx, false), h.strFlat("cfg")...)
	args = append(args, h.strFlat("obj")...)
	r := h.result(Name01(h.m, f, args), wResName01)
	if r[0] != 0 || h.getStr(r, resNameName) != "n" || r[wResName01.payload+wObjectName.offsets[1]] != 1 ||
		h.getStr(r, wResName01.payload+wObjectName.offsets[1]+4) != "ns" {
		t.Errorf("name 0.1 result %v", r)
	}

	ctx := *testCtx
	ctx.Values = []plugin.ContextValue{{Key: "a", Value: "1"}, {Key: "b", Value: `"x"`}}
	args = append(h.ctxFlat(&ctx, true), h.strFlat("cfg")...)
	args = append(args, h.strFlat("obj")...)
	if len(args) != wNameParams02.flat {
		t.Fatalf("%d args", len(args))
	}
	reader := NewReader(h.m, ReadsImport{})
	r = h.result(Name02(h.m, f, args, reader), wResNamed)
	sameCtx(t, f.got.ctx, &ctx)
	if f.got.ctx.Reads != reader {
		t.Error("the 0.2 context answers reads through the host")
	}
	if r[0] != 0 || h.getStr(r, wResNamed.payload) != "n" || h.getStr(r, wResNamed.payload+wObjectName.offsets[1]+4) != "ns" {
		t.Errorf("named result %v", r)
	}
	h.checkReport(r, wResNamed.payload+wNamed.offsets[1])
	h.checkFreed()
}

func TestMutate02TakesItsParametersByPointer(t *testing.T) {
	h := newHost(t)
	f := &fake{report: testReport}
	ctx := *testCtx
	ctx.Values = []plugin.ContextValue{{Key: "zone", Value: `"eu"`}}
	params, pb := h.m.HostAlloc(uint32(wMutateParams02.size))
	flat := h.ctxFlat(&ctx, true)
	c := wMutateParams02.offsets[0]
	put32(pb, c+wCtx02.offsets[0], flat[0])
	put32(pb, c+wCtx02.offsets[0]+4, flat[1])
	pb[c+wCtx02.offsets[1]] = byte(flat[2])
	put32(pb, c+wCtx02.offsets[1]+4, flat[3])
	put32(pb, c+wCtx02.offsets[1]+8, flat[4])
	pb[c+wCtx02.offsets[2]] = byte(flat[5])
	put32(pb, c+wCtx02.offsets[3], flat[6])
	put32(pb, c+wCtx02.offsets[3]+4, flat[7])
	put32(pb, c+wCtx02.offsets[4], flat[8])
	put32(pb, c+wCtx02.offsets[4]+4, flat[9])
	h.putStr(pb, wMutateParams02.offsets[1], "cfg")
	h.putStr(pb, wMutateParams02.offsets[2], "obj")
	pb[wMutateParams02.offsets[3]] = 1
	h.putStr(pb, wMutateParams02.offsets[3]+4, "oth")
	r := h.result(Mutate02(h.m, f, params, nil), wResMutated)
	sameCtx(t, f.got.ctx, &ctx)
	if f.got.config != "cfg" || f.got.object != "obj" || *f.got.other != "oth" {
		t.Errorf("lifted %+v", f.got)
	}
	if r[0] != 0 || h.getStr(r, wResMutated.payload) != `{"out":1}` {
		t.Errorf("result %v", r)
	}
	h.checkReport(r, wResMutated.payload+wMutated.offsets[1])
	h.checkFreed()

	f.report = nil
	r = h.result(Mutate02(h.m, f, params, nil), wResMutated)
	for i := 0; i < 3; i++ {
		if l := h.getList(r, resMutReport+8*i, tStr); len(l) != 0 {
			t.Error("an empty report is three empty lists")
		}
	}
}

func TestProjectAndRender(t *testing.T) {
	h := newHost(t)
	f := &fake{report: testReport}
	r := h.result(Project(h.m, f, append(h.strFlat("cfg"), h.strFlat("crd")...)), wResString)
	if f.got.config != "cfg" || f.got.object != "crd" || h.getStr(r, 4) != `{"crd":2}` {
		t.Errorf("project %+v %v", f.got, r)
	}
	args := append(h.ctxFlat(testCtx, false), h.strFlat("cfg")...)
	args = append(args, h.strFlat("tpl")...)
	args = append(args, h.strFlat("vals")...)
	r = h.result(Render01(h.m, f, args), wResList)
	if f.got.template != "tpl" || f.got.value != "vals" || !reflect.DeepEqual(h.getStrings(r, 4), []string{`{"a":1}`, `{"b":2}`}) {
		t.Errorf("render 0.1 %+v", f.got)
	}
	args = append(h.ctxFlat(testCtx, true), h.strFlat("cfg")...)
	args = append(args, h.strFlat("tpl")...)
	args = append(args, h.strFlat("vals")...)
	if len(args) != wRenderParams02.flat {
		t.Fatalf("%d", len(args))
	}
	r = h.result(Render02(h.m, f, args, nil), wResRend)
	sameCtx(t, f.got.ctx, testCtx)
	if !reflect.DeepEqual(h.getStrings(r, wResRend.payload), []string{`{"a":1}`, `{"b":2}`}) {
		t.Errorf("render 0.2 %v", r)
	}
	h.checkReport(r, wResRend.payload+wRendered.offsets[1])
	f.err = errors.New("boom")
	r = h.result(Render02(h.m, f, args, nil), wResRend)
	if r[0] != 1 || r[4] != byte(plugin.Internal) || h.getStr(r, 8) != "boom" {
		t.Errorf("plain errors are internal: %v", r)
	}
	h.checkFreed()
}

func TestDescribeAndValidate(t *testing.T) {
	h := newHost(t)
	info := plugin.Info{
		Name: "p", Version: "1.2.3", Description: "d", ConfigSchema: `{"type":"object"}`,
		Examples: []plugin.Example{
			{Name: "e1", Config: `{"a":1}`, Input: `{}`, Expected: `{"x":1}`,
				Reads:  []plugin.ReadFixture{{Side: plugin.Service, Resource: plugin.Resource{Group: "apps", Version: "v1", Resource: "deployments"}, Objects: []string{`{"metadata":{"name":"d"}}`}}},
				Values: []plugin.ContextValue{{Key: "k", Value: "1"}}},
			{Name: "e2", Input: `{}`},
		},
		Reads: []plugin.ReadDeclaration{{Side: plugin.Kcp, Resource: plugin.CoreResource("v1", "namespaces"), Purpose: "labels"}},
	}
	f := &fake{info: info}
	for _, v02 := range []bool{false, true} {
		contract, infoT, fixT := plugin.Contract01, wInfo01, wFixture01
		if v02 {
			contract, infoT, fixT = plugin.Contract02, wInfo02, wFixture02
		}
		r := h.result(Describe(h.m, f, contract, "mutator"), infoT)
		if h.getStr(r, 0) != "p" || h.getStr(r, infoT.offsets[1]) != "1.2.3" || h.getStr(r, infoT.offsets[2]) != "d" ||
			r[infoT.offsets[3]] != 1 || h.getStr(r, infoT.offsets[3]+4) != `{"type":"object"}` {
			t.Errorf("info %v", r)
		}
		ex := h.getList(r, infoT.offsets[4], fixT)
		if len(ex) != 2 || h.getStr(ex[0], 0) != "e1" || h.getStr(ex[0], fixT.offsets[1]) != `{"a":1}` ||
			h.getStr(ex[1], fixT.offsets[1]) != "null" || ex[0][fixT.offsets[3]] != 1 || ex[1][fixT.offsets[3]] != 0 ||
			h.getStr(ex[0], fixT.offsets[3]+4) != `{"x":1}` {
			t.Errorf("examples %v", ex)
		}
		if !v02 {
			continue
		}
		rf := h.getList(ex[0], fixT.offsets[4], wReadFixture)
		if len(rf) != 1 || rf[0][0] != byte(plugin.Service) || h.getStr(rf[0], wReadFixture.offsets[1]) != "apps" ||
			h.getStr(rf[0], wReadFixture.offsets[1]+wResource.offsets[2]) != "deployments" ||
			!reflect.DeepEqual(h.getStrings(rf[0], wReadFixture.offsets[2]), []string{`{"metadata":{"name":"d"}}`}) {
			t.Errorf("read fixtures %v", rf)
		}
		vals := h.getList(ex[0], fixT.offsets[5], wEntry)
		if len(vals) != 1 || h.getStr(vals[0], 0) != "k" || h.getStr(vals[0], 8) != "1" {
			t.Errorf("values %v", vals)
		}
		decls := h.getList(r, infoT.offsets[5], wReadDecl)
		if len(decls) != 1 || decls[0][0] != byte(plugin.Kcp) || h.getStr(decls[0], wReadDecl.offsets[1]) != "" ||
			h.getStr(decls[0], wReadDecl.offsets[1]+8) != "v1" || h.getStr(decls[0], wReadDecl.offsets[2]) != "labels" {
			t.Errorf("declarations %v", decls)
		}
	}
	cp, cl := h.str("cfg")
	r := h.result(ValidateConfig(h.m, f, "mutator", cp, cl), wResUnit)
	if r[0] != 0 || f.got.config != "cfg" {
		t.Error("valid")
	}
	f.err = errors.New("labels: empty key")
	cp, cl = h.str("bad")
	r = h.result(ValidateConfig(h.m, f, "mutator", cp, cl), wResUnit)
	if r[0] != 1 || h.getStr(r, wResUnit.payload) != "labels: empty key" {
		t.Errorf("invalid %v", r)
	}
	h.checkFreed()
}

func TestReadsGoThroughTheImport(t *testing.T) {
	h := newHost(t)
	var calls []string
	var requests [][]uint32
	around := 0
	imp := ReadsImport{
		Around: func(call func()) { around++; call() },
		Get: func(p []uint32, ret uint32) {
			requests = append(requests, p)
			calls = append(calls, "get")
			b := h.m.Bytes(ret, uint32(wResGet.size))
			name := string(h.m.Bytes(p[10], p[11]))
			switch name {
			case "found":
				b[0], b[wResGet.payload] = 0, 1
				h.putStr(b, wResGet.payload+4, `{"metadata":{"name":"found"}}`)
			case "missing":
				b[0], b[wResGet.payload] = 0, 0
			default:
				b[0], b[wResGet.payload] = 1, byte(plugin.ReadNotAllowed)
				h.putStr(b, wResGet.payload+wReadError.payload, "not declared")
			}
		},
		List: func(p []uint32, ret uint32) {
			requests = append(requests, p)
			b := h.m.Bytes(ret, uint32(wResList2.size))
			lp, lb := h.m.HostAlloc(16)
			h.putStr(lb, 0, `{"a":1}`)
			h.putStr(lb, 8, `{"b":2}`)
			put32(b, wResList2.payload, lp)
			put32(b, wResList2.payload+4, 2)
		},
	}
	r := NewReader(h.m, imp)
	res := plugin.Resource{Group: "g", Version: "v", Resource: "r"}
	text, found, err := r.Get(plugin.Service, res, "ns", "found")
	if err != nil || !found || text != `{"metadata":{"name":"found"}}` {
		t.Errorf("get found: %q %v %v", text, found, err)
	}
	p := requests[0]
	if len(p) != wGetParams.flat || p[0] != uint32(plugin.Service) || string(h.m.Bytes(p[1], p[2])) != "g" ||
		string(h.m.Bytes(p[5], p[6])) != "r" || p[7] != 1 || string(h.m.Bytes(p[8], p[9])) != "ns" {
		t.Errorf("get request %v", p)
	}
	if _, found, err := r.Get(plugin.Kcp, res, "", "missing"); found || err != nil || requests[1][7] != 0 {
		t.Errorf("get missing: %v %v", found, err)
	}
	_, _, err = r.Get(plugin.Kcp, res, "", "other")
	var re *plugin.ReadError
	if !errors.As(err, &re) || re.Kind != plugin.ReadNotAllowed || re.Message != "not declared" {
		t.Errorf("get error: %v", err)
	}
	list, err := r.List(plugin.Kcp, res, "", "app=db")
	if err != nil || !reflect.DeepEqual(list, []string{`{"a":1}`, `{"b":2}`}) {
		t.Errorf("list: %v %v", list, err)
	}
	p = requests[3]
	if len(p) != wListParams.flat || p[7] != 0 || p[10] != 1 || string(h.m.Bytes(p[11], p[12])) != "app=db" {
		t.Errorf("list request %v", p)
	}
	if around != 4 {
		t.Errorf("every import call runs inside Around (%d)", around)
	}
	h.checkFreed()
}
