package plugintest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"syncweave.dev/sdk/go/plugin"
)

// ExampleResult is the outcome of one worked example: Err is nil when it
// passed.
type ExampleResult struct {
	Name string
	Err  error
}

// RunExamples runs the worked examples of p's Info the way the host's
// self-test does: in plugin.FixtureContext(), with each example's read
// fixtures and context values (0.2), the output compared with Expected as
// JSON (key order ignored, numbers by value). Renderers get an empty
// template; namers' outputs are {"name", "namespace"}.
func RunExamples(p Meta) []ExampleResult {
	info := p.Describe()
	out := make([]ExampleResult, 0, len(info.Examples))
	for _, ex := range info.Examples {
		out = append(out, ExampleResult{Name: ex.Name, Err: runExample(p, &ex)})
	}
	return out
}

// CheckExamples runs the examples (RunExamples), reports each failure with
// t.Errorf, and returns how many passed. A plugin without examples is an
// error too: the host's self-test would have nothing to run.
func CheckExamples(t testing.TB, p Meta) int {
	t.Helper()
	results := RunExamples(p)
	if len(results) == 0 {
		t.Errorf("%s has no worked examples in Info.Examples; the host's self-test runs them before it uses a digest", p.Describe().Name)
	}
	passed := 0
	for _, r := range results {
		if r.Err != nil {
			t.Errorf("example %q failed: %v", r.Name, r.Err)
		} else {
			passed++
		}
	}
	return passed
}

func runExample(p Meta, ex *plugin.Example) error {
	call := Call{Config: json.RawMessage(orNull(ex.Config)), Reads: ex.Reads, Values: ex.Values}
	var got string
	switch r := p.(type) {
	case Mutator:
		out, _, err := Mutate(r, ex.Input, call)
		if err != nil {
			return fmt.Errorf("the call failed: %w", err)
		}
		got = out.String()
	case Namer:
		n, _, err := Name(r, ex.Input, call)
		if err != nil {
			return fmt.Errorf("the call failed: %w", err)
		}
		m := map[string]any{"name": n.Name}
		if n.Namespace != "" {
			m["namespace"] = n.Namespace
		}
		got, _ = plugin.MarshalJSON(m)
	case Projector:
		out, err := Project(r, ex.Input, call)
		if err != nil {
			return fmt.Errorf("the call failed: %w", err)
		}
		got = out.String()
	case Renderer:
		docs, _, err := Render(r, ex.Input, call)
		if err != nil {
			return fmt.Errorf("the call failed: %w", err)
		}
		got, _ = plugin.MarshalJSON(docs)
	default:
		return fmt.Errorf("plugintest: %T is not a mutator, namer, projector or renderer", p)
	}
	if ex.Expected == "" {
		return nil
	}
	return Compare(got, ex.Expected)
}

func orNull(s string) string {
	if strings.TrimSpace(s) == "" {
		return "null"
	}
	return s
}

// Compare compares got with want (JSON texts) as the host compares an
// example's output: nil when equal as JSON values, else an error naming the
// JSON pointer of the first difference and both values there.
func Compare(got, want string) error {
	w, err := plugin.ParseJSON(want)
	if err != nil {
		return fmt.Errorf("the example's expected output is not JSON (%v); fix the example in Info.Examples", err)
	}
	g, err := plugin.ParseJSON(got)
	if err != nil {
		return fmt.Errorf("the output is not JSON: %v", err)
	}
	if path, d := difference("", g, w, true, true); d {
		at := path
		if at == "" {
			at = "the top level"
		}
		gv, _ := plugin.GetPointer(g, path)
		wv, _ := plugin.GetPointer(w, path)
		return fmt.Errorf("output differs at %s: expected %s, got %s", at, shown(wv, path, w), shown(gv, path, g))
	}
	return nil
}

func shown(v any, path string, root any) string {
	if _, ok := plugin.GetPointer(root, path); !ok {
		return "(missing)"
	}
	s, _ := plugin.MarshalJSON(v)
	if len(s) > 120 {
		return s[:120] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func difference(path string, g, w any, hasG, hasW bool) (string, bool) {
	if !hasG || !hasW {
		return path, hasG != hasW
	}
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return path, true
		}
		keys := make([]string, 0, len(wv))
		for k := range wv {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var extra []string
		for k := range gv {
			if _, ok := wv[k]; !ok {
				extra = append(extra, k)
			}
		}
		sort.Strings(extra)
		for _, k := range append(keys, extra...) {
			ge, gok := gv[k]
			we, wok := wv[k]
			if p, d := difference(path+"/"+escapePointer(k), ge, we, gok, wok); d {
				return p, true
			}
		}
		return "", false
	case []any:
		gv, ok := g.([]any)
		if !ok {
			return path, true
		}
		for i := 0; i < max(len(gv), len(wv)); i++ {
			var ge, we any
			if i < len(gv) {
				ge = gv[i]
			}
			if i < len(wv) {
				we = wv[i]
			}
			if p, d := difference(fmt.Sprintf("%s/%d", path, i), ge, we, i < len(gv), i < len(wv)); d {
				return p, true
			}
		}
		return "", false
	case json.Number:
		gn, ok := g.(json.Number)
		return path, !ok || !numbersEqual(gn, wv)
	}
	if g != w {
		return path, true
	}
	return "", false
}

func numbersEqual(a, b json.Number) bool {
	ai, aerr := a.Int64()
	bi, berr := b.Int64()
	if aerr == nil && berr == nil {
		return ai == bi
	}
	af, _ := a.Float64()
	bf, _ := b.Float64()
	return af == bf
}
