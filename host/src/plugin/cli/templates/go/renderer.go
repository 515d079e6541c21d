// {{name}}: a syncweave renderer. Its templates are JSON documents (one
// object, or a list of objects) in which ${Key} is replaced by the string
// value of Key in the values (for InitTemplates: ClusterName and
// ClusterPath).
//
// Config: {"template": "..."} (optional): rendered when the call passes an
// empty template, so that the config alone is a complete example.
package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"syncweave.dev/sdk/go/hostlog"
	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/renderer"
)

// Config is the plugin's config, decoded strictly by the SDK.
type Config struct {
	Template string `json:"template"`
}

// Plugin is the renderer; init registers it as the component's plugin.
var Plugin = &renderer.Plugin[Config]{
	Info: plugin.Info{
		Name:         "{{name}}",
		Version:      "0.1.0",
		Description:  "{{description}}",
		ConfigSchema: `{"type": "object", "additionalProperties": false, "properties": {"template": {"type": "string"}}}`,
		Examples: []plugin.Example{{
			Name:     "a namespace per workspace",
			Config:   `{"template": "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"ws-${ClusterName}\", \"annotations\": {\"path\": \"${ClusterPath}\"}}}"}`,
			Input:    `{"ClusterName": "2x8fkdtr3b1z", "ClusterPath": "root:org:team"}`,
			Expected: `[{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ws-2x8fkdtr3b1z", "annotations": {"path": "root:org:team"}}}]`,
		}},
	},
	Render: render,
}

var placeholder = regexp.MustCompile(`\$\{([^}]*)\}`)

// substitute replaces ${Key} with the values' Key, escaped for a JSON string.
func substitute(template string, values map[string]any) (string, error) {
	if strings.Contains(placeholder.ReplaceAllString(template, ""), "${") {
		return "", plugin.Errorf(plugin.InvalidInput, "the template has a ${ without a closing }")
	}
	var missing error
	out := placeholder.ReplaceAllStringFunc(template, func(m string) string {
		key := m[2 : len(m)-1]
		var text string
		switch v := values[key].(type) {
		case string:
			text = v
		case json.Number, bool:
			text = fmt.Sprint(v)
		default:
			if missing == nil {
				missing = plugin.Errorf(plugin.InvalidInput, "the template refers to %q, but the values have no string or number of that name", key)
			}
			return ""
		}
		quoted, _ := json.Marshal(text)
		return string(quoted[1 : len(quoted)-1])
	})
	return out, missing
}

// render fills the template (the call's, or the config's when the call's is
// empty) and returns its objects.
func render(ctx *plugin.Context, cfg Config, template string, values map[string]any) ([]any, error) {
	if strings.TrimSpace(template) == "" {
		template = cfg.Template
	}
	if template == "" {
		return nil, plugin.Errorf(plugin.InvalidInput, "no template: pass one, or set template in the config")
	}
	text, err := substitute(template, values)
	if err != nil {
		return nil, err
	}
	doc, err := plugin.ParseJSON(text)
	if err != nil {
		return nil, plugin.Errorf(plugin.InvalidInput, "the rendered template is not JSON: %v", err)
	}
	docs, ok := doc.([]any)
	if !ok {
		docs = []any{doc}
	}
	hostlog.Debugf("rendered %d objects for %s", len(docs), ctx.ClusterName)
	return docs, nil
}

func init() { renderer.Register(Plugin) }

// main is never called: the component's functions are the SDK's exports.
func main() {}
