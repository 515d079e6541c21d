// The example mutator, written with the syncweave Go SDK.
//
// Behaviour (identical to examples/rust-mutator, python-mutator and
// js-mutator): set one label from the config and, optionally, copy one
// annotation to another key.
//
//	{"label": {"key": "team", "value": "platform"},
//	 "copyAnnotation": {"from": "example.com/owner", "to": "example.com/previous-owner"}}
package main

import (
	"syncweave.dev/sdk/go/hostlog"
	"syncweave.dev/sdk/go/mutator"
	"syncweave.dev/sdk/go/plugin"
)

// Config is decoded strictly by the SDK (unknown fields are refused), then
// checked by Validate.
type Config struct {
	Label          *Label          `json:"label"`
	CopyAnnotation *CopyAnnotation `json:"copyAnnotation"`
}

type Label struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type CopyAnnotation struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Validate names the field that is wrong.
func (c *Config) Validate() error {
	if c.Label == nil {
		return plugin.Errorf(plugin.InvalidConfig, "label: missing; set {\"label\": {\"key\": …, \"value\": …}}")
	}
	if c.Label.Key == "" {
		return plugin.Errorf(plugin.InvalidConfig, "label.key must not be empty")
	}
	if c.CopyAnnotation != nil && (c.CopyAnnotation.From == "" || c.CopyAnnotation.To == "") {
		return plugin.Errorf(plugin.InvalidConfig, "copyAnnotation.from and copyAnnotation.to must not be empty")
	}
	return nil
}

// Plugin is the example mutator.
var Plugin = &mutator.Plugin[Config]{
	Info: plugin.Info{
		Name:        "go-mutator",
		Version:     "0.1.0",
		Description: "Adds a label from the config and copies an annotation to another key",
		ConfigSchema: `{"type": "object", "required": ["label"], "additionalProperties": false, "properties": {
			"label": {"type": "object", "required": ["key", "value"],
				"properties": {"key": {"type": "string", "minLength": 1}, "value": {"type": "string"}}},
			"copyAnnotation": {"type": "object", "required": ["from", "to"],
				"properties": {"from": {"type": "string", "minLength": 1}, "to": {"type": "string", "minLength": 1}}}}}`,
		Examples: []plugin.Example{{
			Name: "label and copy",
			Config: `{"label": {"key": "team", "value": "platform"},
				"copyAnnotation": {"from": "example.com/owner", "to": "example.com/previous-owner"}}`,
			Input: `{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": {"name": "cfg", "namespace": "default", "annotations": {"example.com/owner": "alice"}}}`,
			Expected: `{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": {"name": "cfg", "namespace": "default", "labels": {"team": "platform"},
					"annotations": {"example.com/owner": "alice", "example.com/previous-owner": "alice"}}}`,
		}},
	},
	Mutate: func(ctx *plugin.Context, cfg Config, obj, _ *plugin.Object) error {
		obj.SetLabel(cfg.Label.Key, cfg.Label.Value)
		if c := cfg.CopyAnnotation; c != nil {
			if value, ok := obj.Annotation(c.From); ok {
				obj.SetAnnotation(c.To, value)
			}
		}
		hostlog.Debugf("mutated an object for %s in %s", ctx.Owner, ctx.ClusterName)
		return nil
	},
}

func init() { mutator.Register(Plugin) }

func main() {}
