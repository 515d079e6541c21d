// Package mutator makes a Go plugin a mutator of contract 0.1 (world
// `mutator` of syncweave:plugin@0.1.0): it rewrites one object on its way
// between kcp and the service cluster.
//
//	type Config struct {
//		Labels map[string]string `json:"labels"`
//	}
//
//	var Plugin = &mutator.Plugin[Config]{
//		Info: plugin.Info{Name: "team-labels", Version: "0.1.0", Description: "…"},
//		Mutate: func(ctx *plugin.Context, cfg Config, obj, other *plugin.Object) error {
//			for k, v := range cfg.Labels {
//				obj.SetLabel(k, v)
//			}
//			return nil
//		},
//	}
//
//	func init() { mutator.Register(Plugin) }
//
//	func main() {}
//
// For reads, reports and context values, use syncweave.dev/sdk/go/v02/mutator.
package mutator

import (
	"syncweave.dev/sdk/go/internal/roles"
	"syncweave.dev/sdk/go/plugin"
)

// Plugin is a mutator whose config decodes into C.
type Plugin[C any] struct {
	Info plugin.Info
	// ParseConfig replaces the default config parsing ([plugin.DecodeConfig]:
	// strict JSON into C, then C's Validate method if it has one). It runs
	// for validate-config and for every call, so a config is checked in one
	// place. Errors without a kind are invalid-config.
	ParseConfig func(config string) (C, error)
	// Mutate edits object in place; other is its counterpart on the other
	// side, if it exists yet (nil otherwise). The host refuses an output
	// whose apiVersion, kind, metadata.name or metadata.namespace changed.
	Mutate func(ctx *plugin.Context, config C, object, other *plugin.Object) error
}

var (
	registered roles.Mutator
	onRegister = func(roles.Meta) {}
)

// Register makes p the component's plugin. Call it once, from an init
// function of the main package. It panics (naming the fix) when p cannot be
// served: no Mutate, no name or version, or features of contract 0.2.
func Register[C any](p *Plugin[C]) {
	roles.CheckRegister("syncweave.dev/sdk/go/mutator", plugin.Contract01, &p.Info, "Mutate", p.Mutate != nil, registered != nil)
	registered = p
	onRegister(p)
}

// Describe is what describe() returns.
func (p *Plugin[C]) Describe() plugin.Info { return p.Info }

// Contract is 0.1.
func (p *Plugin[C]) Contract() plugin.Contract { return plugin.Contract01 }

// World is "mutator".
func (p *Plugin[C]) World() string { return "mutator" }

// ValidateConfig parses config as a call would.
func (p *Plugin[C]) ValidateConfig(config string) error {
	return roles.Validate(p.ParseConfig, config)
}

// MutateJSON is the call on JSON text, as the component and plugintest make
// it (the report is always nil under 0.1).
func (p *Plugin[C]) MutateJSON(ctx *plugin.Context, config, object string, other *string) (string, *plugin.Report, error) {
	out, _, err := roles.Mutate(p.ParseConfig, func(ctx *plugin.Context, cfg C, obj, oth *plugin.Object, _ *plugin.Report) error {
		return p.Mutate(ctx, cfg, obj, oth)
	}, ctx, config, object, other)
	return out, nil, err
}
