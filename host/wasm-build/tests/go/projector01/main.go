package main

import (
	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/projector"
)

type config struct {
	Group string `json:"group"`
}

func (c *config) Validate() error {
	if c.Group == "" {
		return plugin.Errorf(plugin.InvalidConfig, "group: must be set")
	}
	return nil
}

func init() {
	projector.Register(&projector.Plugin[config]{
		Info: plugin.Info{Name: "go-projector01", Version: "0.1.0", Description: "conformance: projector 0.1"},
		Project: func(cfg config, crd *plugin.Object) error {
			return crd.Set("spec.group", cfg.Group)
		},
	})
}

func main() {}
