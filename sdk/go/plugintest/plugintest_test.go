package plugintest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"syncweave.dev/sdk/go/hostlog"
	"syncweave.dev/sdk/go/mutator"
	"syncweave.dev/sdk/go/namer"
	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/plugintest"
	"syncweave.dev/sdk/go/projector"
	"syncweave.dev/sdk/go/renderer"
	mutator02 "syncweave.dev/sdk/go/v02/mutator"
	namer02 "syncweave.dev/sdk/go/v02/namer"
	projector02 "syncweave.dev/sdk/go/v02/projector"
	renderer02 "syncweave.dev/sdk/go/v02/renderer"
)

type labels struct {
	Labels map[string]string `json:"labels"`
	Mode   string            `json:"mode"`
}

var labeler = &mutator.Plugin[labels]{
	Info: plugin.Info{
		Name: "labeler", Version: "0.1.0", Description: "sets labels",
		Examples: []plugin.Example{{
			Name: "sets a label", Config: `{"labels":{"team":"a"}}`,
			Input:    `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`,
			Expected: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"team":"a"}}}`,
		}},
	},
	Mutate: func(ctx *plugin.Context, cfg labels, obj, other *plugin.Object) error {
		switch cfg.Mode {
		case "rename":
			return obj.Set("metadata.name", "other")
		case "panic":
			var m map[string]int
			m["x"]++
		case "other":
			if other != nil {
				obj.SetLabel("other", other.Name())
			}
		}
		for k, v := range cfg.Labels {
			obj.SetLabel(k, v)
		}
		hostlog.Debugf("labelled %s for %s", obj.Name(), ctx.Owner)
		return nil
	},
}

func TestMutator01(t *testing.T) {
	if n := plugintest.CheckExamples(t, labeler); n != 1 {
		t.Errorf("%d examples passed", n)
	}
	hostlog.TakeCaptured()
	out, report, err := plugintest.Mutate(labeler, `{"metadata":{"name":"a","labels":{"keep":"me"}}}`, plugintest.Call{
		Config: `{"labels":{"team":"platform"},"mode":"other"}`,
		Other:  map[string]any{"metadata": map[string]any{"name": "b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Labels(); got["team"] != "platform" || got["keep"] != "me" || got["other"] != "b" || !report.Empty() {
		t.Errorf("%v %v", got, report)
	}
	if lines := hostlog.TakeCaptured(); len(lines) != 1 || lines[0].Message != "labelled a for fixture" {
		t.Errorf("log lines %v", lines)
	}
	_, _, err = plugintest.Mutate(labeler, `{"metadata":{"name":"a"}}`, plugintest.Call{Config: `{"mode":"rename"}`})
	if err == nil || !strings.Contains(err.Error(), `changed metadata.name from "a" to "other"`) || plugin.KindOf(err) != plugin.Internal {
		t.Errorf("identity: %v", err)
	}
	_, _, err = plugintest.Mutate(labeler, `{}`, plugintest.Call{Config: `{"mode":"panic"}`})
	if err == nil || !strings.Contains(err.Error(), "panic: assignment to entry in nil map (at plugintest/plugintest_test.go:") {
		t.Errorf("panic: %v", err)
	}
	_, _, err = plugintest.Mutate(labeler, `[]`, plugintest.Call{})
	if plugin.KindOf(err) != plugin.InvalidInput || !strings.Contains(err.Error(), "object: not a JSON object") {
		t.Errorf("input: %v", err)
	}
	if err := plugintest.ValidateConfig(labeler, `{"label":{}}`); err == nil || !strings.Contains(err.Error(), `unknown field "label"`) {
		t.Errorf("validate: %v", err)
	}
	if err := plugintest.ValidateConfig(labeler, map[string]any{"labels": map[string]string{"a": "b"}}); err != nil {
		t.Error(err)
	}
	_, _, err = plugintest.Mutate(labeler, `{}`, plugintest.Call{Values: []plugin.ContextValue{plugintest.Value("k", 1)}})
	if err == nil || !strings.Contains(err.Error(), "targets 0.1") {
		t.Errorf("0.1 takes no context values: %v", err)
	}
}

func TestExampleMismatchesNameThePointer(t *testing.T) {
	bad := *labeler
	bad.Info.Examples = []plugin.Example{{Name: "wrong", Config: `{"labels":{"team":"a"}}`, Input: `{"metadata":{"name":"x"}}`,
		Expected: `{"metadata":{"name":"x","labels":{"team":"b"}}}`}}
	res := plugintest.RunExamples(&bad)
	if len(res) != 1 || res[0].Err == nil || res[0].Err.Error() != `output differs at /metadata/labels/team: expected "b", got "a"` {
		t.Errorf("%v", res)
	}
	for got, want := range map[string]string{`{"a":1.0}`: `{"a":1}`, `[1,{"b":[true]}]`: `[1, {"b": [true]}]`} {
		if err := plugintest.Compare(got, want); err != nil {
			t.Errorf("%s vs %s: %v", got, want, err)
		}
	}
	if err := plugintest.Compare(`{"a":1,"x":2}`, `{"a":1}`); err == nil || err.Error() != "output differs at /x: expected (missing), got 2" {
		t.Error(err)
	}
}

type prefix struct {
	Prefix string `json:"prefix"`
}

var prefixer = &namer.Plugin[prefix]{
	Info: plugin.Info{Name: "n", Version: "1", Examples: []plugin.Example{{Name: "e", Config: `{"prefix":"p-"}`,
		Input: `{"metadata":{"name":"w"}}`, Expected: `{"name":"p-w","namespace":"fixture-cluster"}`}}},
	Name: func(ctx *plugin.Context, cfg prefix, obj *plugin.Object) (plugin.ObjectName, error) {
		return plugin.ObjectName{Name: cfg.Prefix + obj.Name(), Namespace: ctx.ClusterName}, nil
	},
}

func TestNamer01(t *testing.T) {
	if plugintest.CheckExamples(t, prefixer) != 1 {
		t.Error("examples")
	}
	_, _, err := plugintest.Name(prefixer, `{"metadata":{"name":"W"}}`, plugintest.Call{})
	if err == nil || !strings.Contains(err.Error(), `name "W" is not a valid Kubernetes name`) {
		t.Error(err)
	}
}

type group struct {
	Group string `json:"group"`
}

var regroup = &projector.Plugin[group]{
	Info: plugin.Info{Name: "p", Version: "1"},
	Project: func(cfg group, crd *plugin.Object) error {
		if cfg.Group == "" {
			return plugin.Errorf(plugin.InvalidConfig, "group: must be set")
		}
		return crd.Set("spec.group", cfg.Group)
	},
}

var fill = &renderer.Plugin[struct{}]{
	Info: plugin.Info{Name: "r", Version: "1"},
	Render: func(ctx *plugin.Context, _ struct{}, template string, values map[string]any) ([]any, error) {
		return []any{map[string]any{"kind": "Namespace", "metadata": map[string]any{"name": fmt.Sprint(values["ClusterName"])}}}, nil
	},
}

func TestProjectorAndRenderer01(t *testing.T) {
	out, err := plugintest.Project(regroup, `{"spec":{"group":"a"}}`, plugintest.Call{Config: `{"group":"b"}`})
	if err != nil || out.GetString("spec.group") != "b" {
		t.Error(out, err)
	}
	if _, err := plugintest.Project(regroup, `{}`, plugintest.Call{}); plugin.KindOf(err) != plugin.InvalidConfig {
		t.Error(err)
	}
	docs, _, err := plugintest.Render(fill, map[string]string{"ClusterName": "c1"}, plugintest.Call{})
	if err != nil || len(docs) != 1 || docs[0].Name() != "c1" {
		t.Error(docs, err)
	}
	if _, _, err := plugintest.Render(fill, `[1]`, plugintest.Call{}); plugin.KindOf(err) != plugin.InvalidInput {
		t.Error(err)
	}
}

var namespaces = plugin.CoreResource("v1", "namespaces")

type nsConfig struct {
	Prefix string `json:"prefix"`
}

var nsLabels = &mutator02.Plugin[nsConfig]{
	Info: plugin.Info{
		Name: "ns-labels", Version: "0.2.0",
		Reads: []plugin.ReadDeclaration{{Side: plugin.Kcp, Resource: namespaces, Purpose: "copies its labels"}},
		Examples: []plugin.Example{{
			Name: "copies", Config: `{"prefix":"ns/"}`,
			Input:    `{"metadata":{"name":"w","namespace":"shop"}}`,
			Expected: `{"metadata":{"name":"w","namespace":"shop","labels":{"ns/team":"a","zone":"eu"}}}`,
			Reads:    []plugin.ReadFixture{{Side: plugin.Kcp, Resource: namespaces, Objects: []string{`{"metadata":{"name":"shop","labels":{"team":"a"}}}`}}},
			Values:   []plugin.ContextValue{{Key: "zone", Value: `"eu"`}},
		}},
	},
	Mutate: func(ctx *plugin.Context, cfg nsConfig, obj, _ *plugin.Object, report *plugin.Report) error {
		if cfg.Prefix == "list" {
			objs, err := ctx.List(plugin.Kcp, namespaces, "", "team=a")
			if err != nil {
				return err
			}
			for _, o := range objs {
				obj.SetLabel("seen-"+o.Name(), "yes")
			}
			return nil
		}
		if cfg.Prefix == "bad-report" {
			report.Warning("not camel case", "x")
			return nil
		}
		if cfg.Prefix == "steal" {
			report.SetContext("zone", "us")
			return nil
		}
		if cfg.Prefix == "secrets" {
			_, err := ctx.Get(plugin.Kcp, plugin.CoreResource("v1", "secrets"), "shop", "s")
			return err
		}
		ns, err := ctx.Get(plugin.Kcp, namespaces, "", obj.Namespace())
		if err != nil {
			return err
		}
		if ns == nil {
			report.Warning("NamespaceMissing", "namespace "+obj.Namespace()+" not found")
			report.Condition("LabelsCopied", plugin.ConditionFalse, "NamespaceMissing", "")
			return nil
		}
		for k, v := range ns.Labels() {
			obj.SetLabel(cfg.Prefix+k, v)
		}
		if zone, ok := ctx.Value("zone"); ok {
			obj.SetLabel("zone", zone.(string))
		}
		report.SetContext("example.com/copied", len(ns.Labels()))
		return nil
	},
}

func TestMutator02ReadsReportsAndValues(t *testing.T) {
	if plugintest.CheckExamples(t, nsLabels) != 1 {
		t.Error("examples")
	}
	fixture := []plugin.ReadFixture{{Side: plugin.Kcp, Resource: namespaces, Objects: plugintest.Objects(
		`{"metadata":{"name":"shop","labels":{"team":"a"}}}`,
		map[string]any{"metadata": map[string]any{"name": "other", "labels": map[string]string{"team": "b"}}},
	)}}
	var log []string
	out, report, err := plugintest.Mutate(nsLabels, `{"metadata":{"name":"w","namespace":"shop"}}`,
		plugintest.Call{Config: `{"prefix":"x-"}`, Reads: fixture, ReadLog: &log})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := out.Label("x-team"); v != "a" || len(report.ContextValues) != 1 || report.ContextValues[0].Value != "1" {
		t.Error(out, report)
	}
	if len(log) != 1 || log[0] != "get kcp namespaces (v1) shop" {
		t.Error(log)
	}
	_, report, err = plugintest.Mutate(nsLabels, `{"metadata":{"name":"w","namespace":"gone"}}`, plugintest.Call{Reads: fixture})
	if err != nil || len(report.Warnings()) != 1 || report.Warnings()[0].Reason != "NamespaceMissing" || report.Conditions[0].Status != "False" {
		t.Error(report, err)
	}
	out, _, err = plugintest.Mutate(nsLabels, `{"metadata":{"name":"w"}}`, plugintest.Call{Config: `{"prefix":"list"}`, Reads: fixture})
	if err != nil || out.Labels()["seen-shop"] != "yes" || out.Labels()["seen-other"] != "" {
		t.Error(out, err)
	}
	_, _, err = plugintest.Mutate(nsLabels, `{"metadata":{"name":"w"}}`, plugintest.Call{Config: `{"prefix":"secrets"}`})
	var re *plugin.ReadError
	if !errors.As(err, &re) || re.Kind != plugin.ReadNotAllowed || plugin.KindOf(err) != plugin.InvalidConfig ||
		!strings.Contains(err.Error(), "describe() declares reads of kcp namespaces (v1)") {
		t.Errorf("undeclared read: %v", err)
	}
	_, _, err = plugintest.Mutate(nsLabels, `{"metadata":{"name":"w","namespace":"shop"}}`, plugintest.Call{
		ReadErrors: []plugintest.ReadFailure{{Side: plugin.Kcp, Resource: namespaces, Err: &plugin.ReadError{Kind: plugin.ReadUnavailable, Message: "cache not synced"}}}})
	if plugin.KindOf(err) != plugin.Internal || err.Error() != "read unavailable: cache not synced" {
		t.Errorf("unavailable: %v", err)
	}
	_, _, err = plugintest.Mutate(nsLabels, `{"metadata":{"name":"w"}}`, plugintest.Call{Config: `{"prefix":"bad-report"}`})
	if err == nil || !strings.Contains(err.Error(), `bad output: the host would refuse this report: report.results[0].reason "not camel case" is not a valid reason`) {
		t.Errorf("report rules: %v", err)
	}
	_, _, err = plugintest.Mutate(nsLabels, `{"metadata":{"name":"w"}}`, plugintest.Call{Config: `{"prefix":"steal"}`,
		Values: []plugin.ContextValue{plugintest.Value("zone", "eu")}})
	if err == nil || !strings.Contains(err.Error(), "already set by an earlier step") {
		t.Errorf("context key owner: %v", err)
	}
}

var namer2 = &namer02.Plugin[struct{}]{
	Info: plugin.Info{Name: "n2", Version: "1"},
	Name: func(ctx *plugin.Context, _ struct{}, obj *plugin.Object, report *plugin.Report) (plugin.ObjectName, error) {
		report.Normal("Named", obj.Name())
		return plugin.ObjectName{Name: obj.Name()}, nil
	},
}

var renderer2 = &renderer02.Plugin[struct{}]{
	Info: plugin.Info{Name: "r2", Version: "1"},
	Render: func(ctx *plugin.Context, _ struct{}, template string, values map[string]any, report *plugin.Report) ([]any, error) {
		report.Condition("Rendered", plugin.ConditionTrue, "Done", template)
		return []any{plugintest.Object(`{"kind":"A"}`)}, nil
	},
}

var projector2 = &projector02.Plugin[struct{}]{
	Info:    plugin.Info{Name: "p2", Version: "1"},
	Project: func(_ struct{}, crd *plugin.Object) error { return nil },
}

func TestOther02Roles(t *testing.T) {
	n, report, err := plugintest.Name(namer2, `{"metadata":{"name":"a"}}`, plugintest.Call{})
	if err != nil || n.Name != "a" || n.Namespace != "" || report.Normals()[0].Message != "a" {
		t.Error(n, report, err)
	}
	docs, report, err := plugintest.Render(renderer2, nil, plugintest.Call{Template: "t"})
	if err != nil || docs[0].Kind() != "A" || report.Conditions[0].Message != "t" {
		t.Error(docs, report, err)
	}
	if _, err := plugintest.Project(projector2, `{}`, plugintest.Call{}); err != nil || projector2.Contract() != plugin.Contract02 {
		t.Error(err)
	}
}

func panics(t *testing.T, f func(), want string) {
	t.Helper()
	defer func() {
		p := recover()
		if p == nil || !strings.Contains(fmt.Sprint(p), want) {
			t.Errorf("panic %v, want %q", p, want)
		}
	}()
	f()
}

func TestRegisterRefusesWhatCannotBeServed(t *testing.T) {
	withReads := *labeler
	withReads.Info.Reads = nsLabels.Info.Reads
	panics(t, func() { mutator.Register(&withReads) }, "Info.Reads declares 1 read(s), which needs contract 0.2: import syncweave.dev/sdk/go/v02/mutator")
	withValues := *prefixer
	withValues.Info.Examples = []plugin.Example{{Name: "v", Values: []plugin.ContextValue{{Key: "k", Value: "1"}}}}
	panics(t, func() { namer.Register(&withValues) }, `example "v" has context Values, which needs contract 0.2`)
	panics(t, func() { renderer.Register(&renderer.Plugin[int]{Info: plugin.Info{Name: "x", Version: "1"}}) }, "Plugin.Render is nil")
	panics(t, func() { projector.Register(&projector.Plugin[group]{Project: regroup.Project}) }, "Info.Name and Info.Version must be set")
	readingProjector := *projector2
	readingProjector.Info.Reads = nsLabels.Info.Reads
	panics(t, func() { projector02.Register(&readingProjector) }, "a projector neither reads nor sees context values")
	mutator02.Register(nsLabels)
	panics(t, func() { mutator02.Register(nsLabels) }, "a plugin is already registered")
}
