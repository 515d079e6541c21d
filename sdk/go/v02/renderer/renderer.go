// Package renderer makes a Go plugin a renderer of contract 0.2 (world
// `renderer` of syncweave:plugin@0.2.0): it renders a template into
// Kubernetes objects, may read other objects it declares, and returns a
// report beside the documents.
//
//	var Plugin = &renderer.Plugin[Config]{
//		Info: plugin.Info{Name: "fill", Version: "0.1.0", Description: "…"},
//		Render: func(ctx *plugin.Context, cfg Config, template string, values map[string]any, report *plugin.Report) ([]any, error) {
//			…
//		},
//	}
//
//	func init() { renderer.Register(Plugin) }
package renderer

import (
	"syncweave.dev/sdk/go/internal/roles"
	"syncweave.dev/sdk/go/plugin"
)

// Plugin is a renderer of contract 0.2 whose config decodes into C.
type Plugin[C any] struct {
	Info plugin.Info
	// ParseConfig replaces the default config parsing (see
	// [plugin.DecodeConfig]); it runs for validate-config and every call.
	ParseConfig func(config string) (C, error)
	// Render returns one document per object (each marshals to a JSON
	// object); values is the JSON object exposed to the template, and
	// results, conditions and context values go into report. The host's
	// self-test calls renderers with an empty template: take it from the
	// config then.
	Render func(ctx *plugin.Context, config C, template string, values map[string]any, report *plugin.Report) ([]any, error)
}

var (
	registered roles.Renderer
	onRegister = func(roles.Meta) {}
)

// Register makes p the component's plugin (once, from an init function of
// the main package); it panics naming the fix when p cannot be served.
func Register[C any](p *Plugin[C]) {
	roles.CheckRegister("syncweave.dev/sdk/go/v02/renderer", plugin.Contract02, &p.Info, "Render", p.Render != nil, registered != nil)
	registered = p
	onRegister(p)
}

// Describe is what describe() returns.
func (p *Plugin[C]) Describe() plugin.Info { return p.Info }

// Contract is 0.2.
func (p *Plugin[C]) Contract() plugin.Contract { return plugin.Contract02 }

// World is "renderer".
func (p *Plugin[C]) World() string { return "renderer" }

// ValidateConfig parses config as a call would.
func (p *Plugin[C]) ValidateConfig(config string) error {
	return roles.Validate(p.ParseConfig, config)
}

// RenderJSON is the call on JSON text; ctx.Reads answers the plugin's reads.
func (p *Plugin[C]) RenderJSON(ctx *plugin.Context, config, template, values string) ([]string, *plugin.Report, error) {
	return roles.Render(p.ParseConfig, p.Render, ctx, config, template, values)
}
