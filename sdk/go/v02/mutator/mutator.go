// Package mutator makes a Go plugin a mutator of contract 0.2 (world
// `mutator` of syncweave:plugin@0.2.0): it rewrites one object on its way
// between kcp and the service cluster, may read other objects it declares,
// and returns a report beside the object.
//
//	var namespaces = plugin.CoreResource("v1", "namespaces")
//
//	var Plugin = &mutator.Plugin[Config]{
//		Info: plugin.Info{Name: "ns-labels", Version: "0.1.0", Description: "…",
//			Reads: []plugin.ReadDeclaration{{Side: plugin.Kcp, Resource: namespaces, Purpose: "copies its labels"}}},
//		Mutate: func(ctx *plugin.Context, cfg Config, obj, other *plugin.Object, report *plugin.Report) error {
//			ns, err := ctx.Get(plugin.Kcp, namespaces, "", obj.Namespace())
//			if err != nil {
//				return err
//			}
//			if ns == nil {
//				report.Warning("NamespaceMissing", "…")
//				return nil
//			}
//			…
//		},
//	}
//
//	func init() { mutator.Register(Plugin) }
package mutator

import (
	"syncweave.dev/sdk/go/internal/roles"
	"syncweave.dev/sdk/go/plugin"
)

// Plugin is a mutator of contract 0.2 whose config decodes into C.
type Plugin[C any] struct {
	Info plugin.Info
	// ParseConfig replaces the default config parsing (see
	// [plugin.DecodeConfig]); it runs for validate-config and every call.
	ParseConfig func(config string) (C, error)
	// Mutate edits object in place; other is its counterpart on the other
	// side, if it exists yet. Results, conditions and context values for the
	// later steps go into report. The host refuses an output whose
	// apiVersion, kind, metadata.name or metadata.namespace changed.
	Mutate func(ctx *plugin.Context, config C, object, other *plugin.Object, report *plugin.Report) error
}

var (
	registered roles.Mutator
	onRegister = func(roles.Meta) {}
)

// Register makes p the component's plugin (once, from an init function of
// the main package); it panics naming the fix when p cannot be served.
func Register[C any](p *Plugin[C]) {
	roles.CheckRegister("syncweave.dev/sdk/go/v02/mutator", plugin.Contract02, &p.Info, "Mutate", p.Mutate != nil, registered != nil)
	registered = p
	onRegister(p)
}

// Describe is what describe() returns.
func (p *Plugin[C]) Describe() plugin.Info { return p.Info }

// Contract is 0.2.
func (p *Plugin[C]) Contract() plugin.Contract { return plugin.Contract02 }

// World is "mutator".
func (p *Plugin[C]) World() string { return "mutator" }

// ValidateConfig parses config as a call would.
func (p *Plugin[C]) ValidateConfig(config string) error {
	return roles.Validate(p.ParseConfig, config)
}

// MutateJSON is the call on JSON text, as the component and plugintest make
// it; ctx.Reads answers the plugin's reads.
func (p *Plugin[C]) MutateJSON(ctx *plugin.Context, config, object string, other *string) (string, *plugin.Report, error) {
	return roles.Mutate(p.ParseConfig, p.Mutate, ctx, config, object, other)
}
