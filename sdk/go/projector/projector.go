// Package projector makes a Go plugin a projector of contract 0.1 (world
// `projector` of syncweave:plugin@0.1.0): it transforms a
// CustomResourceDefinition before it is published to kcp.
//
//	var Plugin = &projector.Plugin[Config]{
//		Info: plugin.Info{Name: "regroup", Version: "0.1.0", Description: "…"},
//		Project: func(cfg Config, crd *plugin.Object) error {
//			return crd.Set("spec.group", cfg.Group)
//		},
//	}
//
//	func init() { projector.Register(Plugin) }
//
// The projector world is the same in contract 0.2
// (syncweave.dev/sdk/go/v02/projector): a projection has no consumer to
// read for or report to.
package projector

import (
	"syncweave.dev/sdk/go/internal/roles"
	"syncweave.dev/sdk/go/plugin"
)

// Plugin is a projector whose config decodes into C.
type Plugin[C any] struct {
	Info plugin.Info
	// ParseConfig replaces the default config parsing (see
	// [plugin.DecodeConfig]); it runs for validate-config and every call.
	ParseConfig func(config string) (C, error)
	// Project edits crd (an apiextensions.k8s.io/v1
	// CustomResourceDefinition) in place into the projected CRD.
	Project func(config C, crd *plugin.Object) error
}

var (
	registered roles.Projector
	onRegister = func(roles.Meta) {}
)

// Register makes p the component's plugin (once, from an init function of
// the main package); it panics naming the fix when p cannot be served.
func Register[C any](p *Plugin[C]) {
	roles.CheckRegister("syncweave.dev/sdk/go/projector", plugin.Contract01, &p.Info, "Project", p.Project != nil, registered != nil)
	registered = p
	onRegister(p)
}

// Describe is what describe() returns.
func (p *Plugin[C]) Describe() plugin.Info { return p.Info }

// Contract is 0.1.
func (p *Plugin[C]) Contract() plugin.Contract { return plugin.Contract01 }

// World is "projector".
func (p *Plugin[C]) World() string { return "projector" }

// ValidateConfig parses config as a call would.
func (p *Plugin[C]) ValidateConfig(config string) error {
	return roles.Validate(p.ParseConfig, config)
}

// ProjectJSON is the call on JSON text.
func (p *Plugin[C]) ProjectJSON(config, crd string) (string, error) {
	return roles.Project(p.ParseConfig, p.Project, config, crd)
}
