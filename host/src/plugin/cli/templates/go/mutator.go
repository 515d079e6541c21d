// {{name}}: a syncweave mutator. It sets the labels named in its config on
// every object it sees.
//
// Config: {"labels": {"team": "platform"}}.
package main

import (
	"syncweave.dev/sdk/go/hostlog"
	"syncweave.dev/sdk/go/mutator"
	"syncweave.dev/sdk/go/plugin"
)

// Config is the plugin's config. The SDK decodes it strictly (an unknown
// field is an error naming it), then calls Validate; validate-config runs
// the same code, so a config is checked in one place.
type Config struct {
	Labels map[string]string `json:"labels"`
}

// Validate checks what decoding cannot; errors name the field.
func (c *Config) Validate() error {
	if c.Labels == nil {
		return plugin.Errorf(plugin.InvalidConfig, `labels: missing; set the labels to add, e.g. {"labels": {"team": "platform"}}`)
	}
	for key := range c.Labels {
		if key == "" {
			return plugin.Errorf(plugin.InvalidConfig, "labels: a label key must not be empty")
		}
	}
	return nil
}

// Plugin is the mutator; init registers it as the component's plugin.
var Plugin = &mutator.Plugin[Config]{
	Info: plugin.Info{
		Name:        "{{name}}",
		Version:     "0.1.0",
		Description: "{{description}}",
		ConfigSchema: `{"type": "object", "required": ["labels"], "additionalProperties": false,
			"properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}}}`,
		// Worked examples: `syncweave plugin test --examples` and
		// plugin_test.go run them, and the host runs them as a self-test.
		Examples: []plugin.Example{{
			Name:     "sets a label",
			Config:   `{"labels": {"team": "platform"}}`,
			Input:    `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "default"}}`,
			Expected: `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "default", "labels": {"team": "platform"}}}`,
		}},
	},
	Mutate: mutate,
}

// mutate edits obj in place; other is its counterpart on the other side, if
// it exists yet.
func mutate(ctx *plugin.Context, cfg Config, obj, other *plugin.Object) error {
	for key, value := range cfg.Labels {
		obj.SetLabel(key, value)
	}
	hostlog.Debugf("set %d labels on %s", len(cfg.Labels), obj.Name())
	return nil
}

func init() { mutator.Register(Plugin) }

// main is never called: the component's functions are the SDK's exports.
func main() {}
