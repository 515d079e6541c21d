package main

import (
	"strings"
	"testing"

	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/plugintest"
)

func TestExamplesHold(t *testing.T) {
	if n := plugintest.CheckExamples(t, Plugin); n != 1 {
		t.Errorf("%d examples passed", n)
	}
}

func TestCopiesOnlyAnnotationsThatExist(t *testing.T) {
	out, _, err := plugintest.Mutate(Plugin, `{"metadata": {"name": "a"}}`, plugintest.Call{
		Config: `{"label": {"key": "example.com/team", "value": "x"}, "copyAnnotation": {"from": "a", "to": "b"}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != `{"metadata":{"labels":{"example.com/team":"x"},"name":"a"}}` {
		t.Error(got)
	}
}

func TestBadConfigsNameTheField(t *testing.T) {
	for config, want := range map[string]string{
		`{}`:                                   "label: missing",
		`{"label": {"key": "", "value": "v"}}`: "label.key must not be empty",
		`{"label": {"key": "k", "value": 1}}`:  "config.label.value: expected string, got number",
		`{"label": {"key": "k", "value": "v"}, "copyAnnotation": {"from": "a"}}`: "copyAnnotation.from and copyAnnotation.to",
		`{"labels": {}}`: `unknown field "labels"`,
	} {
		err := plugintest.ValidateConfig(Plugin, config)
		if err == nil || !strings.Contains(err.Error(), want) || plugin.KindOf(err) != plugin.InvalidConfig {
			t.Errorf("%s: %v, want %q", config, err, want)
		}
	}
	if _, _, err := plugintest.Mutate(Plugin, `[]`, plugintest.Call{Config: `{"label": {"key": "k", "value": "v"}}`}); plugin.KindOf(err) != plugin.InvalidInput {
		t.Errorf("a non-object input is invalid-input: %v", err)
	}
}
