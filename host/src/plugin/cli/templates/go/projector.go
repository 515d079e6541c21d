// {{name}}: a syncweave projector. It publishes a CRD under another API
// group (the one in its config) and renames it to match.
//
// Config: {"group": "example.org"}.
package main

import (
	"strings"

	"syncweave.dev/sdk/go/hostlog"
	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/projector"
)

// Config is the plugin's config, decoded strictly by the SDK.
type Config struct {
	Group string `json:"group"`
}

// Validate checks what decoding cannot; errors name the field.
func (c *Config) Validate() error {
	if c.Group == "" {
		return plugin.Errorf(plugin.InvalidConfig, `group: missing; set the API group to publish under, e.g. {"group": "example.org"}`)
	}
	if !strings.Contains(c.Group, ".") {
		return plugin.Errorf(plugin.InvalidConfig, "group: %q is not a fully qualified API group (e.g. example.org)", c.Group)
	}
	return nil
}

const (
	crdIn  = `{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.internal.example.com"}, "spec": {"group": "internal.example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"}}}`
	crdOut = `{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.org"}, "spec": {"group": "example.org", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"}}}`
)

// Plugin is the projector; init registers it as the component's plugin.
var Plugin = &projector.Plugin[Config]{
	Info: plugin.Info{
		Name:         "{{name}}",
		Version:      "0.1.0",
		Description:  "{{description}}",
		ConfigSchema: `{"type": "object", "required": ["group"], "additionalProperties": false, "properties": {"group": {"type": "string", "minLength": 1}}}`,
		Examples: []plugin.Example{{
			Name: "moves the CRD to another group", Config: `{"group": "example.org"}`, Input: crdIn, Expected: crdOut,
		}},
	},
	Project: project,
}

// project edits the CRD in place.
func project(cfg Config, crd *plugin.Object) error {
	plural := crd.GetString("spec.names.plural")
	if plural == "" {
		return plugin.Errorf(plugin.InvalidInput, "spec.names.plural is missing")
	}
	if err := crd.Set("spec.group", cfg.Group); err != nil {
		return err
	}
	if err := crd.Set("metadata.name", plural+"."+cfg.Group); err != nil {
		return err
	}
	hostlog.Debugf("projected %s into %s", plural, cfg.Group)
	return nil
}

func init() { projector.Register(Plugin) }

// main is never called: the component's functions are the SDK's exports.
func main() {}
