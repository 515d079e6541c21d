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

func TestKeepsOtherLabels(t *testing.T) {
	out, _, err := plugintest.Mutate(Plugin, `{"metadata": {"name": "a", "labels": {"app": "web"}}}`,
		plugintest.Call{Config: `{"labels": {"example.com/tier": "gold"}}`})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"labels":{"app":"web","example.com/tier":"gold"},"name":"a"}}`
	if got := out.String(); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestBadConfigsNameTheField(t *testing.T) {
	if err := plugintest.ValidateConfig(Plugin, `{"labels": {"a": "b"}}`); err != nil {
		t.Error(err)
	}
	for config, want := range map[string]string{
		`null`:                  "labels: missing",
		`{"labels": {"a": 1}}`:  "config.labels: expected string, got number",
		`{"labels": {"": "x"}}`: "must not be empty",
		`{"label": {}}`:         `unknown field "label"`,
	} {
		err := plugintest.ValidateConfig(Plugin, config)
		if err == nil || !strings.Contains(err.Error(), want) || plugin.KindOf(err) != plugin.InvalidConfig {
			t.Errorf("%s: %v, want an invalid-config error containing %q", config, err, want)
		}
	}
}
