package plugin

import "fmt"

// Info is what a plugin says about itself (describe()).
type Info struct {
	Name        string
	Version     string
	Description string
	// ConfigSchema is a JSON Schema of the config, as JSON text; "" for none.
	ConfigSchema string
	// Examples are worked examples: documentation, unit tests (plugintest)
	// and the host's self-test before it uses a digest.
	Examples []Example
	// Reads declares every kind of object the plugin reads (contract 0.2).
	// The host refuses any other read.
	Reads []ReadDeclaration
}

// Example is one worked example. Config, Input and Expected are JSON text.
type Example struct {
	Name string
	// Config is the plugin config; "" means null.
	Config string
	// Input is the object (mutator, namer), the CRD (projector) or the
	// values (renderer).
	Input string
	// Expected is the output when the example is deterministic; "" when it
	// only has to run without error. Outputs compare as JSON values (key
	// order does not matter, numbers by value). Namers' outputs are written
	// {"name": …, "namespace": …}, renderers' as an array of objects.
	Expected string
	// Reads are what the example's reads see (contract 0.2).
	Reads []ReadFixture
	// Values are context values from earlier steps (contract 0.2).
	Values []ContextValue
}

// Side says which API server a read goes to.
type Side uint8

const (
	// Kcp is the consumer's workspace in kcp (the workspace of the object
	// the call is made for).
	Kcp Side = iota
	// Service is the provider's service cluster.
	Service
)

func (s Side) String() string {
	switch s {
	case Kcp:
		return "kcp"
	case Service:
		return "service"
	}
	return fmt.Sprintf("side(%d)", uint8(s))
}

// Resource is a resource type; Group is "" for the core group and
// Resource the plural name.
type Resource struct {
	Group    string
	Version  string
	Resource string
}

// CoreResource is a resource of the core group:
// CoreResource("v1", "namespaces").
func CoreResource(version, resource string) Resource {
	return Resource{Version: version, Resource: resource}
}

// String writes the resource as the host does: "namespaces (v1)",
// "deployments (apps/v1)".
func (r Resource) String() string {
	if r.Group == "" {
		return fmt.Sprintf("%s (%s)", r.Resource, r.Version)
	}
	return fmt.Sprintf("%s (%s/%s)", r.Resource, r.Group, r.Version)
}

// ReadDeclaration is a kind of object the plugin reads (contract 0.2).
type ReadDeclaration struct {
	Side     Side
	Resource Resource
	// Purpose says why the plugin reads it (shown by `syncweave plugin
	// inspect`).
	Purpose string
}

// ReadFixture is the objects of one kind that an example's reads see
// (contract 0.2). Each object is JSON text with metadata.name (and
// metadata.namespace when namespaced): reads find them by those and by
// metadata.labels.
type ReadFixture struct {
	Side     Side
	Resource Resource
	Objects  []string
}

// Needs02 says why info cannot be served under contract 0.1, or "" when
// it can: read declarations and examples with reads or context values need
// 0.2. The role packages of 0.1 check it when a plugin is registered.
func (info *Info) Needs02() string {
	if len(info.Reads) > 0 {
		return fmt.Sprintf("Info.Reads declares %d read(s)", len(info.Reads))
	}
	for _, ex := range info.Examples {
		if len(ex.Reads) > 0 {
			return fmt.Sprintf("example %q has Reads", ex.Name)
		}
		if len(ex.Values) > 0 {
			return fmt.Sprintf("example %q has context Values", ex.Name)
		}
	}
	return ""
}
