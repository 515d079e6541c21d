package main

import (
	"strings"
	"testing"

	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/plugintest"
)

func TestExamplesHold(t *testing.T) {
	if n := plugintest.CheckExamples(t, Plugin); n != 2 {
		t.Errorf("%d examples passed", n)
	}
}

func shop(labels string) []plugin.ReadFixture {
	return []plugin.ReadFixture{{Side: plugin.Kcp, Resource: Namespaces, Objects: []string{
		`{"metadata": {"name": "shop", "labels": ` + labels + `}}`,
	}}}
}

func TestAMissingNamespaceIsAWarning(t *testing.T) {
	var log []string
	out, report, err := plugintest.Mutate(Plugin, `{"metadata": {"name": "a", "namespace": "gone"}}`,
		plugintest.Call{Config: `{"prefix": "p/"}`, Reads: shop(`{"team": "a"}`), ReadLog: &log})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Labels()) != 0 || len(report.Warnings()) != 1 || report.Warnings()[0].Reason != "NamespaceNotFound" {
		t.Errorf("%v %+v", out, report)
	}
	if len(log) != 1 || log[0] != "get kcp namespaces (v1) gone" {
		t.Errorf("reads: %v", log)
	}
}

func TestNothingIsReadForStatusOrClusterScopedObjects(t *testing.T) {
	var log []string
	up := plugin.FixtureContext()
	up.Direction = plugin.ServiceToKcp
	for _, c := range []struct {
		ctx    *plugin.Context
		object string
	}{{up, `{"metadata": {"name": "a", "namespace": "shop"}}`}, {nil, `{"metadata": {"name": "a"}}`}} {
		out, _, err := plugintest.Mutate(Plugin, c.object, plugintest.Call{Config: `{"prefix": "p/"}`, Context: c.ctx, ReadLog: &log})
		if err != nil || len(out.Labels()) != 0 {
			t.Errorf("%v %v", out, err)
		}
	}
	if len(log) != 0 {
		t.Errorf("reads: %v", log)
	}
}

func TestInvalidKeysAreSkippedWithAWarning(t *testing.T) {
	out, report, err := plugintest.Mutate(Plugin, `{"metadata": {"name": "a", "namespace": "shop"}}`,
		plugintest.Call{Config: `{"prefix": "x-"}`, Reads: shop(`{"team": "a", "` + strings.Repeat("k", 62) + `": "long"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := out.Label("x-team"); v != "a" || len(out.Labels()) != 1 || report.Warnings()[0].Reason != "LabelSkipped" {
		t.Errorf("%v %+v", out, report)
	}
}

func TestReadFailuresFailTheCall(t *testing.T) {
	_, _, err := plugintest.Mutate(Plugin, `{"metadata": {"name": "a", "namespace": "shop"}}`, plugintest.Call{
		Config: `{"prefix": "p/"}`,
		ReadErrors: []plugintest.ReadFailure{{Side: plugin.Kcp, Resource: Namespaces,
			Err: &plugin.ReadError{Kind: plugin.ReadNotAllowed, Message: "the WasmPlugin does not allow reads of namespaces"}}},
	})
	if plugin.KindOf(err) != plugin.InvalidConfig || !strings.Contains(err.Error(), "does not allow") {
		t.Errorf("%v", err)
	}
}

func TestBadConfigsNameTheField(t *testing.T) {
	for config, want := range map[string]string{
		`{}`:                             "prefix: missing",
		`{"prefix": "Bad_Prefix/"}`:      "must be a DNS subdomain",
		`{"prefix": "a/b/"}`:             "must be a DNS subdomain",
		`{"prefix": "p/", "keys": [""]}`: "keys[0]: must not be empty",
		`{"prefix": "p/", "key": []}`:    `unknown field "key"`,
	} {
		err := plugintest.ValidateConfig(Plugin, config)
		if err == nil || !strings.Contains(err.Error(), want) || plugin.KindOf(err) != plugin.InvalidConfig {
			t.Errorf("%s: %v, want %q", config, err, want)
		}
	}
}
