// Package namer makes a Go plugin a namer of contract 0.2 (world `namer`
// of syncweave:plugin@0.2.0): it decides what each kcp object's copy is
// called on the service cluster, may read other objects it declares, and
// returns a report beside the name.
//
//	var Plugin = &namer.Plugin[Config]{
//		Info: plugin.Info{Name: "prefixed", Version: "0.1.0", Description: "…"},
//		Name: func(ctx *plugin.Context, cfg Config, obj *plugin.Object, report *plugin.Report) (plugin.ObjectName, error) {
//			return plugin.ObjectName{Name: cfg.Prefix + obj.Name(), Namespace: ctx.ClusterName}, nil
//		},
//	}
//
//	func init() { namer.Register(Plugin) }
package namer

import (
	"syncweave.dev/sdk/go/internal/roles"
	"syncweave.dev/sdk/go/plugin"
)

// Plugin is a namer of contract 0.2 whose config decodes into C.
type Plugin[C any] struct {
	Info plugin.Info
	// ParseConfig replaces the default config parsing (see
	// [plugin.DecodeConfig]); it runs for validate-config and every call.
	ParseConfig func(config string) (C, error)
	// Name returns the object's name and namespace ("" for cluster-scoped
	// objects) on the service cluster; results, conditions and context
	// values go into report.
	Name func(ctx *plugin.Context, config C, object *plugin.Object, report *plugin.Report) (plugin.ObjectName, error)
}

var (
	registered roles.Namer
	onRegister = func(roles.Meta) {}
)

// Register makes p the component's plugin (once, from an init function of
// the main package); it panics naming the fix when p cannot be served.
func Register[C any](p *Plugin[C]) {
	roles.CheckRegister("syncweave.dev/sdk/go/v02/namer", plugin.Contract02, &p.Info, "Name", p.Name != nil, registered != nil)
	registered = p
	onRegister(p)
}

// Describe is what describe() returns.
func (p *Plugin[C]) Describe() plugin.Info { return p.Info }

// Contract is 0.2.
func (p *Plugin[C]) Contract() plugin.Contract { return plugin.Contract02 }

// World is "namer".
func (p *Plugin[C]) World() string { return "namer" }

// ValidateConfig parses config as a call would.
func (p *Plugin[C]) ValidateConfig(config string) error {
	return roles.Validate(p.ParseConfig, config)
}

// NameJSON is the call on JSON text; ctx.Reads answers the plugin's reads.
func (p *Plugin[C]) NameJSON(ctx *plugin.Context, config, object string) (plugin.ObjectName, *plugin.Report, error) {
	return roles.Name(p.ParseConfig, p.Name, ctx, config, object)
}
