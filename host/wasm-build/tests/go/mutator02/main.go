package main

import (
	"fmt"
	"strings"

	"syncweave.dev/sdk/go/hostlog"
	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/v02/mutator"
)

var (
	namespaces = plugin.CoreResource("v1", "namespaces")
	configmaps = plugin.CoreResource("v1", "configmaps")
)

type config struct {
	Prefix string `json:"prefix"`
	Mode   string `json:"mode"`
}

func init() {
	mutator.Register(&mutator.Plugin[config]{
		Info: plugin.Info{
			Name: "go-mutator02", Version: "0.2.0", Description: "conformance: mutator 0.2",
			Reads: []plugin.ReadDeclaration{
				{Side: plugin.Kcp, Resource: namespaces, Purpose: "copies its labels"},
				{Side: plugin.Service, Resource: plugin.Resource{Group: "apps", Version: "v1", Resource: "deployments"}, Purpose: "counts them"},
			},
			Examples: []plugin.Example{{
				Name: "copies", Config: `{"prefix":"ns/"}`,
				Input:    `{"metadata":{"name":"w","namespace":"shop"}}`,
				Expected: `{"metadata":{"name":"w","namespace":"shop","labels":{"ns/team":"a"}}}`,
				Reads:    []plugin.ReadFixture{{Side: plugin.Kcp, Resource: namespaces, Objects: []string{`{"metadata":{"name":"shop","labels":{"team":"a"}}}`}}},
				Values:   []plugin.ContextValue{{Key: "zone", Value: `"eu"`}},
			}},
		},
		Mutate: func(ctx *plugin.Context, cfg config, obj, other *plugin.Object, report *plugin.Report) error {
			switch cfg.Mode {
			case "fail":
				return plugin.Errorf(plugin.Rejected, "no")
			case "list-churn":
				// Reads while the GC is busy: the host allocates each list's
				// strings through cabi_realloc.
				total := 0
				for i := 0; i < 30; i++ {
					objs, err := ctx.List(plugin.Service, configmaps, "ns", "app=db")
					if err != nil {
						return err
					}
					total += len(objs)
					for j := 0; j < 2000; j++ {
						_ = make([]byte, 1024+j%512)
					}
				}
				obj.SetLabel("listed", fmt.Sprint(total))
				return nil
			}
			ns, err := ctx.Get(plugin.Kcp, namespaces, "", obj.Namespace())
			if err != nil {
				return err
			}
			if ns == nil {
				report.Warning("NamespaceMissing", "namespace "+obj.Namespace()+" not found")
			} else {
				for k, v := range ns.Labels() {
					obj.SetLabel(cfg.Prefix+k, v)
				}
			}
			deps, err := ctx.List(plugin.Service, plugin.Resource{Group: "apps", Version: "v1", Resource: "deployments"}, "db", "tier in (a,b)")
			if err != nil {
				return err
			}
			names := []string{}
			for _, d := range deps {
				names = append(names, d.Name())
			}
			obj.SetLabel("deployments", strings.Join(names, "."))
			var values []string
			for _, v := range ctx.Values {
				values = append(values, v.Key+"="+v.Value)
			}
			obj.SetAnnotation("values", strings.Join(values, ","))
			if other != nil {
				obj.SetAnnotation("other", other.Name())
			}
			obj.SetAnnotation("path", ctx.ClusterPath)
			report.Normal("LabelsCopied", "copied")
			report.Condition("LabelsCopied", plugin.ConditionTrue, "Copied", "all of them")
			report.SetContext("example.com/count", len(names))
			hostlog.Debugf("mutated %s", obj.Name())
			return nil
		},
	})
}

func main() {}
