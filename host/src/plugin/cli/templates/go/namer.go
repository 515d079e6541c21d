// {{name}}: a syncweave namer. It places each object in a namespace named
// after the consumer's logical cluster, under its own name with a prefix
// from the config.
//
// Config: {"prefix": "team-a-"} (optional; default no prefix).
package main

import (
	"syncweave.dev/sdk/go/hostlog"
	"syncweave.dev/sdk/go/namer"
	"syncweave.dev/sdk/go/plugin"
)

// Config is the plugin's config, decoded strictly by the SDK.
type Config struct {
	Prefix string `json:"prefix"`
}

// Plugin is the namer; init registers it as the component's plugin.
var Plugin = &namer.Plugin[Config]{
	Info: plugin.Info{
		Name:         "{{name}}",
		Version:      "0.1.0",
		Description:  "{{description}}",
		ConfigSchema: `{"type": "object", "additionalProperties": false, "properties": {"prefix": {"type": "string"}}}`,
		Examples: []plugin.Example{{
			Name:     "prefixed name in the cluster's namespace",
			Config:   `{"prefix": "team-a-"}`,
			Input:    `{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": "default"}}`,
			Expected: `{"name": "team-a-w1", "namespace": "fixture-cluster"}`,
		}},
	},
	Name: name,
}

// name says where the object goes on the service cluster: cluster-scoped
// objects (no metadata.namespace) stay cluster-scoped.
func name(ctx *plugin.Context, cfg Config, obj *plugin.Object) (plugin.ObjectName, error) {
	if obj.Name() == "" {
		return plugin.ObjectName{}, plugin.Errorf(plugin.InvalidInput, "metadata.name is missing")
	}
	out := plugin.ObjectName{Name: cfg.Prefix + obj.Name()}
	if obj.Has("metadata.namespace") {
		out.Namespace = ctx.ClusterName
	}
	hostlog.Debugf("naming %s in %s", out.Name, ctx.ClusterName)
	return out, nil
}

func init() { namer.Register(Plugin) }

// main is never called: the component's functions are the SDK's exports.
func main() {}
