package main

import (
	"testing"

	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/plugintest"
)

// Run natively with `go test ./...`: no component is needed.

func TestExamplesHold(t *testing.T) {
	if n := plugintest.CheckExamples(t, Plugin); n != 1 {
		t.Errorf("%d examples passed, want 1 (update the count when you add examples)", n)
	}
}

func TestClusterScopedObjectsStayClusterScoped(t *testing.T) {
	got, _, err := plugintest.Name(Plugin, `{"metadata": {"name": "global"}}`, plugintest.Call{})
	if err != nil || got != (plugin.ObjectName{Name: "global"}) {
		t.Errorf("%+v, %v", got, err)
	}
}

func TestErrors(t *testing.T) {
	if _, _, err := plugintest.Name(Plugin, `{"metadata": {}}`, plugintest.Call{}); plugin.KindOf(err) != plugin.InvalidInput {
		t.Errorf("no name: %v", err)
	}
	if err := plugintest.ValidateConfig(Plugin, `{"prefix": 1}`); plugin.KindOf(err) != plugin.InvalidConfig {
		t.Errorf("bad prefix: %v", err)
	}
}
