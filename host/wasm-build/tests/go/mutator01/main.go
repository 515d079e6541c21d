package main

import (
	"strings"

	"syncweave.dev/sdk/go/hostlog"
	"syncweave.dev/sdk/go/mutator"
	"syncweave.dev/sdk/go/plugin"
)

type config struct {
	Labels map[string]string `json:"labels"`
	Mode   string            `json:"mode"`
}

func init() {
	mutator.Register(&mutator.Plugin[config]{
		Info: plugin.Info{
			Name: "go-mutator01", Version: "0.1.0", Description: "conformance: mutator 0.1",
			ConfigSchema: `{"type":"object"}`,
			Examples: []plugin.Example{{Name: "labels", Config: `{"labels":{"a":"b"}}`,
				Input: `{"metadata":{"name":"x"}}`, Expected: `{"metadata":{"name":"x","labels":{"a":"b"}}}`}},
		},
		Mutate: func(ctx *plugin.Context, cfg config, obj, other *plugin.Object) error {
			switch cfg.Mode {
			case "reject":
				return plugin.Errorf(plugin.Rejected, "rejected %s", obj.Name())
			case "panic":
				var m map[string]int
				m["x"]++
			case "churn":
				// Garbage enough for several collections inside the call.
				n := 0
				for i := 0; i < 20000; i++ {
					n += len(make([]byte, 512+i%2048))
				}
				obj.SetLabel("churned", strings.Repeat("x", n%7))
			}
			obj.SetLabel("cluster", ctx.ClusterName)
			obj.SetLabel("path", ctx.ClusterPath)
			obj.SetLabel("direction", ctx.Direction.String())
			obj.SetLabel("owner", ctx.Owner)
			if other != nil {
				obj.SetLabel("other", other.Name())
			}
			for k, v := range cfg.Labels {
				obj.SetLabel(k, v)
			}
			hostlog.Infof("mutated %s", obj.Name())
			return nil
		},
	})
}

func main() {}
