// Package renderer makes a Go plugin a renderer of contract 0.1 (world
// `renderer` of syncweave:plugin@0.1.0): it renders a template into
// Kubernetes objects (InitTemplates and similar).
//
//	var Plugin = &renderer.Plugin[Config]{
//		Info: plugin.Info{Name: "fill", Version: "0.1.0", Description: "…"},
//		Render: func(ctx *plugin.Context, cfg Config, template string, values map[string]any) ([]any, error) {
//			…
//		},
//	}
//
//	func init() { renderer.Register(Plugin) }
//
// For reads, reports and context values, use syncweave.dev/sdk/go/v02/renderer.
package renderer

import (
	"syncweave.dev/sdk/go/internal/roles"
	"syncweave.dev/sdk/go/plugin"
)

// Plugin is a renderer whose config decodes into C.
type Plugin[C any] struct {
	Info plugin.Info
	// ParseConfig replaces the default config parsing (see
	// [plugin.DecodeConfig]); it runs for validate-config and every call.
	ParseConfig func(config string) (C, error)
	// Render returns one document per object: each a map, a struct, a
	// *plugin.Object or anything else that marshals to a JSON object.
	// values is the JSON object exposed to the template (for InitTemplates:
	// ClusterName and ClusterPath). The host's self-test calls renderers with
	// an empty template: take it from the config then.
	Render func(ctx *plugin.Context, config C, template string, values map[string]any) ([]any, error)
}

var (
	registered roles.Renderer
	onRegister = func(roles.Meta) {}
)

// Register makes p the component's plugin (once, from an init function of
// the main package); it panics naming the fix when p cannot be served.
func Register[C any](p *Plugin[C]) {
	roles.CheckRegister("syncweave.dev/sdk/go/renderer", plugin.Contract01, &p.Info, "Render", p.Render != nil, registered != nil)
	registered = p
	onRegister(p)
}

// Describe is what describe() returns.
func (p *Plugin[C]) Describe() plugin.Info { return p.Info }

// Contract is 0.1.
func (p *Plugin[C]) Contract() plugin.Contract { return plugin.Contract01 }

// World is "renderer".
func (p *Plugin[C]) World() string { return "renderer" }

// ValidateConfig parses config as a call would.
func (p *Plugin[C]) ValidateConfig(config string) error {
	return roles.Validate(p.ParseConfig, config)
}

// RenderJSON is the call on JSON text (the report is always nil under 0.1).
func (p *Plugin[C]) RenderJSON(ctx *plugin.Context, config, template, values string) ([]string, *plugin.Report, error) {
	docs, _, err := roles.Render(p.ParseConfig, func(ctx *plugin.Context, cfg C, template string, values map[string]any, _ *plugin.Report) ([]any, error) {
		return p.Render(ctx, cfg, template, values)
	}, ctx, config, template, values)
	return docs, nil, err
}
