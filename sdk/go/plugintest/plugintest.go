// Package plugintest runs a Go plugin's logic natively, under plain
// `go test`, through the same JSON adapters the component uses, and checks
// what the host checks: a mutator keeps the object's identity, a namer's
// name is a valid Kubernetes name, a 0.2 report follows the host's rules
// and bounds, reads are answered from fixtures and only when declared.
//
//	func TestExamples(t *testing.T) { plugintest.CheckExamples(t, Plugin) }
//
//	func TestSetsTheTeam(t *testing.T) {
//		out, _, err := plugintest.Mutate(Plugin, `{"metadata": {"name": "a"}}`,
//			plugintest.Call{Config: `{"labels": {"team": "platform"}}`})
//		if err != nil {
//			t.Fatal(err)
//		}
//		if got, _ := out.Label("team"); got != "platform" {
//			t.Errorf("team = %q", got)
//		}
//	}
//
// Inputs, configs and expected outputs may be given as JSON text (a
// string, []byte or json.RawMessage) or as values that marshal to JSON (a
// map, a struct, a *plugin.Object).
package plugintest

import (
	"encoding/json"
	"fmt"
	"strings"

	"syncweave.dev/sdk/go/plugin"
)

// Meta is what every registered plugin offers (the role packages'
// *Plugin[C] types).
type Meta interface {
	Describe() plugin.Info
	ValidateConfig(config string) error
	Contract() plugin.Contract
	World() string
}

// Mutator is a mutator of either contract.
type Mutator interface {
	Meta
	MutateJSON(ctx *plugin.Context, config, object string, other *string) (string, *plugin.Report, error)
}

// Namer is a namer of either contract.
type Namer interface {
	Meta
	NameJSON(ctx *plugin.Context, config, object string) (plugin.ObjectName, *plugin.Report, error)
}

// Projector is a projector of either contract.
type Projector interface {
	Meta
	ProjectJSON(config, crd string) (string, error)
}

// Renderer is a renderer of either contract.
type Renderer interface {
	Meta
	RenderJSON(ctx *plugin.Context, config, template, values string) ([]string, *plugin.Report, error)
}

// Call is what a call sees beside its input.
type Call struct {
	// Config is the plugin config (nil: null, as the host passes when a use
	// sets none).
	Config any
	// Context is the call's context; nil means plugin.FixtureContext(), the
	// context of the host's self-test.
	Context *plugin.Context
	// Values are context values set by earlier steps of a chain (contract
	// 0.2), in order; see [Value].
	Values []plugin.ContextValue
	// Reads are the objects the call's reads find (contract 0.2); only
	// resources the plugin declares in Info.Reads are answered.
	Reads []plugin.ReadFixture
	// ReadErrors make reads of a resource fail as the host's would (e.g. a
	// cache that is not synced: plugin.ReadUnavailable).
	ReadErrors []ReadFailure
	// ReadLog, when set, receives each read the call made
	// ("get kcp namespaces (v1) shop").
	ReadLog *[]string
	// Other is a mutator's counterpart object (nil: none).
	Other any
	// Template is a renderer's template.
	Template string
}

// ReadFailure makes every read of Resource on Side fail with Err.
type ReadFailure struct {
	Side     plugin.Side
	Resource plugin.Resource
	Err      *plugin.ReadError
}

// Value is a context value from an earlier step: value marshalled to JSON
// (JSON text when it is a json.RawMessage).
func Value(key string, value any) plugin.ContextValue {
	text, err := jsonText(value, false)
	if err != nil {
		panic(fmt.Sprintf("plugintest.Value(%q): %v", key, err))
	}
	return plugin.ContextValue{Key: key, Value: text}
}

// Object reads JSON text (or marshals a value) into a *plugin.Object, for
// read fixtures and expectations; it panics on bad input.
func Object(v any) *plugin.Object {
	text, err := jsonText(v, true)
	if err != nil {
		panic(fmt.Sprintf("plugintest.Object: %v", err))
	}
	o, err := plugin.ParseObject(text)
	if err != nil {
		panic(fmt.Sprintf("plugintest.Object: %v", err))
	}
	return o
}

// Objects is a ReadFixture's object list from JSON texts or values.
func Objects(vs ...any) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		text, err := jsonText(v, true)
		if err != nil {
			panic(fmt.Sprintf("plugintest.Objects: object %d: %v", i, err))
		}
		out[i] = text
	}
	return out
}

// jsonText is v as JSON text. With textIsJSON, a string is taken as JSON
// text; otherwise only json.RawMessage and []byte are.
func jsonText(v any, textIsJSON bool) (string, error) {
	switch x := v.(type) {
	case nil:
		return "null", nil
	case string:
		if textIsJSON {
			return x, nil
		}
	case json.RawMessage:
		return string(x), nil
	case []byte:
		return string(x), nil
	case *plugin.Object:
		return x.JSON()
	}
	return plugin.MarshalJSON(v)
}

func input(what string, v any) (string, error) {
	text, err := jsonText(v, true)
	if err != nil {
		return "", fmt.Errorf("plugintest: %s cannot be written as JSON: %w", what, err)
	}
	return text, nil
}

func badOutput(format string, args ...any) error {
	return &plugin.Error{Kind: plugin.Internal, Message: "bad output: " + fmt.Sprintf(format, args...)}
}

// prepare builds the call's context and checks what the contract version
// allows. It returns the context and the fixture host (nil under 0.1).
func prepare(p Meta, call *Call) (*plugin.Context, *fixtureHost, error) {
	info := p.Describe()
	ctx := plugin.FixtureContext()
	if call.Context != nil {
		c := *call.Context
		ctx = &c
	}
	if p.Contract() == plugin.Contract01 {
		if why := info.Needs02(); why != "" {
			return nil, nil, fmt.Errorf("plugintest: %s, which needs contract 0.2 (import syncweave.dev/sdk/go/v02/%s)", why, p.World())
		}
		if len(call.Reads) > 0 || len(call.ReadErrors) > 0 || len(call.Values) > 0 || len(ctx.Values) > 0 {
			return nil, nil, fmt.Errorf("plugintest: read fixtures and context values are for plugins of contract 0.2; this %s targets 0.1", p.World())
		}
		ctx.Reads = nil
		return ctx, nil, nil
	}
	ctx.Values = append(append([]plugin.ContextValue(nil), ctx.Values...), call.Values...)
	host, err := newFixtureHost(call.Reads, call.ReadErrors, info.Reads)
	if err != nil {
		return nil, nil, err
	}
	ctx.Reads = host
	return ctx, host, nil
}

func finish(host *fixtureHost, call *Call, ctx *plugin.Context, report *plugin.Report) error {
	if host == nil {
		return nil
	}
	if call.ReadLog != nil {
		*call.ReadLog = append(*call.ReadLog, host.log...)
	}
	return checkReport(report, ctx)
}

// Mutate runs a mutator on object and checks its output as the host does:
// a JSON object with the input's apiVersion, kind, metadata.name and
// metadata.namespace, labels and annotations maps of strings.
func Mutate(p Mutator, object any, call Call) (*plugin.Object, *plugin.Report, error) {
	ctx, host, err := prepare(p, &call)
	if err != nil {
		return nil, nil, err
	}
	config, err := input("the config", call.Config)
	if err != nil {
		return nil, nil, err
	}
	in, err := input("the object", object)
	if err != nil {
		return nil, nil, err
	}
	var other *string
	if call.Other != nil {
		o, err := input("the other object", call.Other)
		if err != nil {
			return nil, nil, err
		}
		other = &o
	}
	out, report, err := p.MutateJSON(ctx, config, in, other)
	if err != nil {
		return nil, nil, err
	}
	if err := finish(host, &call, ctx, report); err != nil {
		return nil, nil, err
	}
	if err := checkMutation(in, out); err != nil {
		return nil, nil, err
	}
	obj, err := plugin.ParseObject(out)
	if err != nil {
		return nil, nil, badOutput("%v", err)
	}
	return obj, orEmpty(report), nil
}

// Name runs a namer on object and checks the name as the host does.
func Name(p Namer, object any, call Call) (plugin.ObjectName, *plugin.Report, error) {
	ctx, host, err := prepare(p, &call)
	if err != nil {
		return plugin.ObjectName{}, nil, err
	}
	config, err := input("the config", call.Config)
	if err != nil {
		return plugin.ObjectName{}, nil, err
	}
	in, err := input("the object", object)
	if err != nil {
		return plugin.ObjectName{}, nil, err
	}
	name, report, err := p.NameJSON(ctx, config, in)
	if err != nil {
		return plugin.ObjectName{}, nil, err
	}
	if err := finish(host, &call, ctx, report); err != nil {
		return plugin.ObjectName{}, nil, err
	}
	if err := checkName(name); err != nil {
		return plugin.ObjectName{}, nil, err
	}
	return name, orEmpty(report), nil
}

// Project runs a projector on crd.
func Project(p Projector, crd any, call Call) (*plugin.Object, error) {
	if _, _, err := prepare(p, &call); err != nil {
		return nil, err
	}
	config, err := input("the config", call.Config)
	if err != nil {
		return nil, err
	}
	in, err := input("the CRD", crd)
	if err != nil {
		return nil, err
	}
	out, err := p.ProjectJSON(config, in)
	if err != nil {
		return nil, err
	}
	obj, err := plugin.ParseObject(out)
	if err != nil {
		return nil, badOutput("%v", err)
	}
	return obj, nil
}

// Render runs a renderer on values with call.Template; each document must
// be a JSON object.
func Render(p Renderer, values any, call Call) ([]*plugin.Object, *plugin.Report, error) {
	ctx, host, err := prepare(p, &call)
	if err != nil {
		return nil, nil, err
	}
	config, err := input("the config", call.Config)
	if err != nil {
		return nil, nil, err
	}
	in, err := input("the values", values)
	if err != nil {
		return nil, nil, err
	}
	docs, report, err := p.RenderJSON(ctx, config, call.Template, in)
	if err != nil {
		return nil, nil, err
	}
	if err := finish(host, &call, ctx, report); err != nil {
		return nil, nil, err
	}
	out := make([]*plugin.Object, len(docs))
	for i, d := range docs {
		if out[i], err = plugin.ParseObject(d); err != nil {
			return nil, nil, badOutput("document %d: %v", i, err)
		}
	}
	return out, orEmpty(report), nil
}

// ValidateConfig runs validate-config on config (JSON text or a value).
func ValidateConfig(p Meta, config any) error {
	text, err := input("the config", config)
	if err != nil {
		return err
	}
	return p.ValidateConfig(text)
}

func orEmpty(r *plugin.Report) *plugin.Report {
	if r == nil {
		return &plugin.Report{}
	}
	return r
}

// checkMutation: the output is an object with the input's identity.
func checkMutation(in, out string) error {
	type meta struct {
		Name        *string           `json:"name"`
		Namespace   *string           `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	}
	type identity struct {
		APIVersion *string `json:"apiVersion"`
		Kind       *string `json:"kind"`
		Metadata   *meta   `json:"metadata"`
	}
	var after identity
	if !strings.HasPrefix(strings.TrimSpace(out), "{") {
		return badOutput("not a JSON object")
	}
	if err := json.Unmarshal([]byte(out), &after); err != nil {
		return badOutput("not a valid Kubernetes object (%v); apiVersion, kind, metadata.name and metadata.namespace must be strings, metadata.labels and metadata.annotations maps of strings", err)
	}
	var before identity
	if json.Unmarshal([]byte(in), &before) != nil {
		return nil
	}
	show := func(s *string) string {
		if s == nil {
			return "(unset)"
		}
		return fmt.Sprintf("%q", *s)
	}
	field := func(m *meta, f func(*meta) *string) *string {
		if m == nil {
			return nil
		}
		return f(m)
	}
	for _, c := range []struct {
		name string
		b, a *string
	}{
		{"apiVersion", before.APIVersion, after.APIVersion},
		{"kind", before.Kind, after.Kind},
		{"metadata.name", field(before.Metadata, func(m *meta) *string { return m.Name }), field(after.Metadata, func(m *meta) *string { return m.Name })},
		{"metadata.namespace", field(before.Metadata, func(m *meta) *string { return m.Namespace }), field(after.Metadata, func(m *meta) *string { return m.Namespace })},
	} {
		if (c.b == nil) != (c.a == nil) || (c.b != nil && *c.b != *c.a) {
			return badOutput("the mutator changed %s from %s to %s; mutators may not change apiVersion, kind, metadata.name or metadata.namespace (use a namer plugin to rename)", c.name, show(c.b), show(c.a))
		}
	}
	return nil
}

// checkName: a valid Kubernetes name, and namespace name when set.
func checkName(n plugin.ObjectName) error {
	valid := func(s string) bool {
		if s == "" || len(s) > 253 {
			return false
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
				return false
			}
		}
		return true
	}
	if !valid(n.Name) {
		return badOutput("name %q is not a valid Kubernetes name (lower-case letters, digits, '-', '.', 1-253 characters)", n.Name)
	}
	if n.Namespace != "" && (!valid(n.Namespace) || len(n.Namespace) > 63 || strings.Contains(n.Namespace, ".")) {
		return badOutput("namespace %q is not a valid namespace name (lower-case letters, digits, '-', 1-63 characters)", n.Namespace)
	}
	return nil
}
