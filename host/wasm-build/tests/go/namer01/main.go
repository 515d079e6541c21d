package main

import (
	"syncweave.dev/sdk/go/namer"
	"syncweave.dev/sdk/go/plugin"
)

func init() {
	namer.Register(&namer.Plugin[struct{ Prefix string }]{
		Info: plugin.Info{Name: "go-namer01", Version: "0.1.0", Description: "conformance: namer 0.1"},
		Name: func(ctx *plugin.Context, cfg struct{ Prefix string }, obj *plugin.Object) (plugin.ObjectName, error) {
			if obj.Name() == "" {
				return plugin.ObjectName{}, plugin.Errorf(plugin.InvalidInput, "metadata.name: missing")
			}
			ns := ctx.ClusterName
			if obj.Namespace() == "" {
				ns = ""
			}
			return plugin.ObjectName{Name: cfg.Prefix + obj.Name(), Namespace: ns}, nil
		},
	})
}

func main() {}
