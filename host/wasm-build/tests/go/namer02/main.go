package main

import (
	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/v02/namer"
)

func init() {
	namer.Register(&namer.Plugin[struct{}]{
		Info: plugin.Info{Name: "go-namer02", Version: "0.2.0", Description: "conformance: namer 0.2",
			Reads: []plugin.ReadDeclaration{{Side: plugin.Kcp, Resource: plugin.CoreResource("v1", "namespaces"), Purpose: "tenant label"}}},
		Name: func(ctx *plugin.Context, _ struct{}, obj *plugin.Object, report *plugin.Report) (plugin.ObjectName, error) {
			ns, err := ctx.Get(plugin.Kcp, plugin.CoreResource("v1", "namespaces"), "", obj.Namespace())
			if err != nil {
				return plugin.ObjectName{}, err
			}
			tenant := "none"
			if ns != nil {
				tenant, _ = ns.Label("tenant")
			}
			zone, _ := ctx.Value("zone")
			report.SetContext("tenant", tenant)
			return plugin.ObjectName{Name: tenant + "-" + obj.Name() + "-" + zone.(string), Namespace: ctx.ClusterName}, nil
		},
	})
}

func main() {}
