// Package roles is what the role packages (mutator, namer, projector,
// renderer, of both contract versions) share: the interfaces the component
// glue and plugintest call, and the adapters between JSON text and a
// plugin's typed functions.
package roles

import (
	"errors"
	"fmt"
	"strings"

	"syncweave.dev/sdk/go/plugin"
)

// Meta is what every registered plugin offers.
type Meta interface {
	// Describe is describe(): the plugin's Info.
	Describe() plugin.Info
	// ValidateConfig is validate-config: the config parsed as the role
	// function gets it.
	ValidateConfig(config string) error
	Contract() plugin.Contract
	World() string
}

// Mutator is a registered mutator (either contract).
type Mutator interface {
	Meta
	MutateJSON(ctx *plugin.Context, config, object string, other *string) (string, *plugin.Report, error)
}

// Namer is a registered namer (either contract).
type Namer interface {
	Meta
	NameJSON(ctx *plugin.Context, config, object string) (plugin.ObjectName, *plugin.Report, error)
}

// Projector is a registered projector (either contract).
type Projector interface {
	Meta
	ProjectJSON(config, crd string) (string, error)
}

// Renderer is a registered renderer (either contract).
type Renderer interface {
	Meta
	RenderJSON(ctx *plugin.Context, config, template, values string) ([]string, *plugin.Report, error)
}

// ParseConfig parses config with the plugin's own parser, or strictly into
// C ([plugin.DecodeConfig]). Errors without a kind are invalid-config.
func ParseConfig[C any](custom func(string) (C, error), config string) (C, error) {
	if custom == nil {
		return plugin.DecodeConfig[C](config)
	}
	c, err := custom(config)
	var pe *plugin.Error
	if err != nil && !errors.As(err, &pe) {
		err = &plugin.Error{Kind: plugin.InvalidConfig, Message: err.Error(), Err: err}
	}
	return c, err
}

// Validate is validate-config: the config parsed as a call would parse it.
func Validate[C any](custom func(string) (C, error), config string) error {
	return plugin.Guard(func() error {
		_, err := ParseConfig(custom, config)
		return err
	})
}

func parseInput(what, text string) (*plugin.Object, error) {
	o, err := plugin.ParseObject(text)
	if err != nil {
		return nil, plugin.Errorf(plugin.InvalidInput, "%s: %v", what, err)
	}
	return o, nil
}

// Mutate runs a mutator function on JSON text.
func Mutate[C any](
	parse func(string) (C, error),
	fn func(*plugin.Context, C, *plugin.Object, *plugin.Object, *plugin.Report) error,
	ctx *plugin.Context, config, object string, other *string,
) (out string, report *plugin.Report, err error) {
	report = &plugin.Report{}
	err = plugin.Guard(func() error {
		cfg, err := ParseConfig(parse, config)
		if err != nil {
			return err
		}
		obj, err := parseInput("object", object)
		if err != nil {
			return err
		}
		var oth *plugin.Object
		if other != nil {
			if oth, err = parseInput("other", *other); err != nil {
				return err
			}
		}
		if err := fn(ctx, cfg, obj, oth, report); err != nil {
			return err
		}
		if err := report.Err(); err != nil {
			return err
		}
		out, err = obj.JSON()
		if err != nil {
			return plugin.Errorf(plugin.Internal, "the object cannot be written as JSON: %v", err)
		}
		return nil
	})
	return out, report, err
}

// Name runs a namer function on JSON text.
func Name[C any](
	parse func(string) (C, error),
	fn func(*plugin.Context, C, *plugin.Object, *plugin.Report) (plugin.ObjectName, error),
	ctx *plugin.Context, config, object string,
) (name plugin.ObjectName, report *plugin.Report, err error) {
	report = &plugin.Report{}
	err = plugin.Guard(func() error {
		cfg, err := ParseConfig(parse, config)
		if err != nil {
			return err
		}
		obj, err := parseInput("object", object)
		if err != nil {
			return err
		}
		if name, err = fn(ctx, cfg, obj, report); err != nil {
			return err
		}
		return report.Err()
	})
	return name, report, err
}

// Project runs a projector function on JSON text.
func Project[C any](
	parse func(string) (C, error),
	fn func(C, *plugin.Object) error,
	config, crd string,
) (out string, err error) {
	err = plugin.Guard(func() error {
		cfg, err := ParseConfig(parse, config)
		if err != nil {
			return err
		}
		obj, err := parseInput("crd", crd)
		if err != nil {
			return err
		}
		if err := fn(cfg, obj); err != nil {
			return err
		}
		out, err = obj.JSON()
		if err != nil {
			return plugin.Errorf(plugin.Internal, "the CRD cannot be written as JSON: %v", err)
		}
		return nil
	})
	return out, err
}

// Render runs a renderer function on JSON text.
func Render[C any](
	parse func(string) (C, error),
	fn func(*plugin.Context, C, string, map[string]any, *plugin.Report) ([]any, error),
	ctx *plugin.Context, config, template, values string,
) (docs []string, report *plugin.Report, err error) {
	report = &plugin.Report{}
	err = plugin.Guard(func() error {
		cfg, err := ParseConfig(parse, config)
		if err != nil {
			return err
		}
		vals := map[string]any{}
		if t := strings.TrimSpace(values); t != "" && t != "null" {
			v, err := plugin.ParseJSON(t)
			if err != nil {
				return plugin.Errorf(plugin.InvalidInput, "values: not valid JSON: %v", err)
			}
			m, ok := v.(map[string]any)
			if !ok {
				return plugin.Errorf(plugin.InvalidInput, "values: not a JSON object")
			}
			vals = m
		}
		out, err := fn(ctx, cfg, template, vals, report)
		if err != nil {
			return err
		}
		if err := report.Err(); err != nil {
			return err
		}
		docs = make([]string, 0, len(out))
		for i, d := range out {
			text, err := plugin.MarshalJSON(d)
			if err != nil {
				return plugin.Errorf(plugin.Internal, "document %d cannot be written as JSON: %v", i, err)
			}
			docs = append(docs, text)
		}
		return nil
	})
	return docs, report, err
}

// CheckRegister panics, naming the fix, when a plugin cannot be registered
// as a world of contract: a missing role function, an unnamed plugin, a
// second registration, or 0.2 features under 0.1.
func CheckRegister(pkg string, contract plugin.Contract, info *plugin.Info, fnField string, fnSet bool, already bool) {
	fail := func(format string, args ...any) {
		panic(fmt.Sprintf("%s.Register: %s", pkg, fmt.Sprintf(format, args...)))
	}
	if already {
		fail("a plugin is already registered; a component is exactly one plugin (register once, in one init function)")
	}
	if !fnSet {
		fail("Plugin.%s is nil; set it to the plugin's %s function", fnField, strings.ToLower(fnField))
	}
	if info.Name == "" || info.Version == "" {
		fail("Plugin.Info.Name and Info.Version must be set (describe() returns them; e.g. Name: \"team-labels\", Version: \"0.1.0\")")
	}
	world := pkg[strings.LastIndex(pkg, "/")+1:]
	if contract == plugin.Contract01 {
		if why := info.Needs02(); why != "" {
			fail("%s, which needs contract 0.2: import syncweave.dev/sdk/go/v02/%s instead of %s", why, world, pkg)
		}
	} else if why := info.Needs02(); world == "projector" && why != "" {
		fail("%s, but a projector neither reads nor sees context values (its world has no reads, in 0.2 as in 0.1)", why)
	}
}
