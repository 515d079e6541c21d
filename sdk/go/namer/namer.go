// Package namer makes a Go plugin a namer of contract 0.1 (world `namer`
// of syncweave:plugin@0.1.0): it decides what each kcp object's copy is
// called on the service cluster.
//
//	var Plugin = &namer.Plugin[Config]{
//		Info: plugin.Info{Name: "prefixed", Version: "0.1.0", Description: "…"},
//		Name: func(ctx *plugin.Context, cfg Config, obj *plugin.Object) (plugin.ObjectName, error) {
//			return plugin.ObjectName{Name: cfg.Prefix + obj.Name(), Namespace: ctx.ClusterName}, nil
//		},
//	}
//
//	func init() { namer.Register(Plugin) }
//
// For reads, reports and context values, use syncweave.dev/sdk/go/v02/namer.
package namer

import (
	"syncweave.dev/sdk/go/internal/roles"
	"syncweave.dev/sdk/go/plugin"
)

// Plugin is a namer whose config decodes into C.
type Plugin[C any] struct {
	Info plugin.Info
	// ParseConfig replaces the default config parsing (see
	// [plugin.DecodeConfig]); it runs for validate-config and every call.
	ParseConfig func(config string) (C, error)
	// Name returns the object's name and namespace ("" for cluster-scoped
	// objects) on the service cluster. The host refuses names that are not
	// valid Kubernetes names.
	Name func(ctx *plugin.Context, config C, object *plugin.Object) (plugin.ObjectName, error)
}

var (
	registered roles.Namer
	onRegister = func(roles.Meta) {}
)

// Register makes p the component's plugin (once, from an init function of
// the main package); it panics naming the fix when p cannot be served.
func Register[C any](p *Plugin[C]) {
	roles.CheckRegister("syncweave.dev/sdk/go/namer", plugin.Contract01, &p.Info, "Name", p.Name != nil, registered != nil)
	registered = p
	onRegister(p)
}

// Describe is what describe() returns.
func (p *Plugin[C]) Describe() plugin.Info { return p.Info }

// Contract is 0.1.
func (p *Plugin[C]) Contract() plugin.Contract { return plugin.Contract01 }

// World is "namer".
func (p *Plugin[C]) World() string { return "namer" }

// ValidateConfig parses config as a call would.
func (p *Plugin[C]) ValidateConfig(config string) error {
	return roles.Validate(p.ParseConfig, config)
}

// NameJSON is the call on JSON text (the report is always nil under 0.1).
func (p *Plugin[C]) NameJSON(ctx *plugin.Context, config, object string) (plugin.ObjectName, *plugin.Report, error) {
	name, _, err := roles.Name(p.ParseConfig, func(ctx *plugin.Context, cfg C, obj *plugin.Object, _ *plugin.Report) (plugin.ObjectName, error) {
		return p.Name(ctx, cfg, obj)
	}, ctx, config, object)
	return name, nil, err
}
