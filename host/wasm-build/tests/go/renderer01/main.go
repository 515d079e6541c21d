package main

import (
	"fmt"

	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/renderer"
)

func init() {
	renderer.Register(&renderer.Plugin[struct{}]{
		Info: plugin.Info{Name: "go-renderer01", Version: "0.1.0", Description: "conformance: renderer 0.1"},
		Render: func(ctx *plugin.Context, _ struct{}, template string, values map[string]any) ([]any, error) {
			return []any{
				map[string]any{"kind": "Namespace", "metadata": map[string]any{"name": fmt.Sprint(values["ClusterName"])}},
				map[string]any{"kind": "ConfigMap", "data": map[string]any{"template": template, "owner": ctx.Owner}},
			}, nil
		},
	})
}

func main() {}
