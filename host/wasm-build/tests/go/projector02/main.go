package main

import (
	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/v02/projector"
)

func init() {
	projector.Register(&projector.Plugin[struct{ Group string }]{
		Info: plugin.Info{Name: "go-projector02", Version: "0.2.0", Description: "conformance: projector 0.2",
			Examples: []plugin.Example{{Name: "regroups", Config: `{"Group":"b"}`, Input: `{"spec":{"group":"a"}}`, Expected: `{"spec":{"group":"b"}}`}}},
		Project: func(cfg struct{ Group string }, crd *plugin.Object) error {
			return crd.Set("spec.group", cfg.Group)
		},
	})
}

func main() {}
