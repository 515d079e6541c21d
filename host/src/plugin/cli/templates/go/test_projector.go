package main

import (
	"strings"
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

func TestErrors(t *testing.T) {
	err := plugintest.ValidateConfig(Plugin, `{"group": "nodots"}`)
	if plugin.KindOf(err) != plugin.InvalidConfig || !strings.HasPrefix(err.Error(), "group:") {
		t.Errorf("bad group: %v", err)
	}
	if _, err := plugintest.Project(Plugin, `{"spec": {}}`, plugintest.Call{Config: `{"group": "a.b"}`}); plugin.KindOf(err) != plugin.InvalidInput {
		t.Errorf("no plural: %v", err)
	}
}
