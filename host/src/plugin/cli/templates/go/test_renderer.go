package main

import (
	"strings"
	"testing"

	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/plugintest"
)

// Run natively with `go test ./...`: no component is needed.

func TestExamplesHold(t *testing.T) {
	// Renderer examples carry their template in the config and run with an empty one.
	if n := plugintest.CheckExamples(t, Plugin); n != 1 {
		t.Errorf("%d examples passed, want 1 (update the count when you add examples)", n)
	}
}

func TestValuesAreEscapedAndUnknownKeysRefused(t *testing.T) {
	docs, _, err := plugintest.Render(Plugin, `{"X": "say \"hi\""}`,
		plugintest.Call{Template: `[{"kind": "A", "v": "${X}"}, {"kind": "B"}]`})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].GetString("v") != `say "hi"` || docs[1].Kind() != "B" {
		t.Errorf("%v", docs)
	}
	_, _, err = plugintest.Render(Plugin, `{}`, plugintest.Call{Template: "${Nope}"})
	if plugin.KindOf(err) != plugin.InvalidInput || !strings.Contains(err.Error(), "Nope") {
		t.Errorf("unknown key: %v", err)
	}
}
