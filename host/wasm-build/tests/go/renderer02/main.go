package main

import (
	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/v02/renderer"
)

func init() {
	renderer.Register(&renderer.Plugin[struct{}]{
		Info: plugin.Info{Name: "go-renderer02", Version: "0.2.0", Description: "conformance: renderer 0.2",
			Reads: []plugin.ReadDeclaration{{Side: plugin.Service, Resource: plugin.CoreResource("v1", "configmaps"), Purpose: "defaults"}}},
		Render: func(ctx *plugin.Context, _ struct{}, template string, values map[string]any, report *plugin.Report) ([]any, error) {
			cm, err := ctx.Get(plugin.Service, plugin.CoreResource("v1", "configmaps"), "defaults", "settings")
			if err != nil {
				return nil, err
			}
			report.Warning("Rendered", template)
			return []any{map[string]any{"kind": "ConfigMap", "data": map[string]any{
				"size": cm.GetString("data.size"), "cluster": values["ClusterName"]}}}, nil
		},
	})
}

func main() {}
