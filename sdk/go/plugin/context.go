package plugin

import (
	"encoding/json"
	"fmt"
)

// Direction says which way an object is travelling.
type Direction uint8

const (
	// KcpToService: from a consumer's kcp workspace down to the service
	// cluster (spec).
	KcpToService Direction = iota
	// ServiceToKcp: from the service cluster back up to kcp (status,
	// related objects).
	ServiceToKcp
)

func (d Direction) String() string {
	switch d {
	case KcpToService:
		return "kcp-to-service"
	case ServiceToKcp:
		return "service-to-kcp"
	}
	return fmt.Sprintf("direction(%d)", uint8(d))
}

// ContextValue is one value passed along a mutation chain (contract 0.2):
// Value is JSON text.
type ContextValue struct {
	Key   string
	Value string
}

// Context says where a call comes from. Plugins get nothing else from the
// host: no clock, no randomness, no I/O but reads (contract 0.2).
type Context struct {
	// ClusterName is the logical cluster name of the consumer workspace
	// (e.g. "2x8fkdtr3b1z").
	ClusterName string
	// ClusterPath is the workspace path (e.g. "root:org:team"); "" when the
	// host does not know it.
	ClusterPath string
	Direction   Direction
	// Owner is the name of the PublishedResource or InitTarget this call is
	// made for.
	Owner string
	// Values were set by earlier steps of the same chain, in the order they
	// were set (contract 0.2; always empty under 0.1).
	Values []ContextValue
	// Reads answers Get and List: the host inside a component of contract
	// 0.2, read fixtures under plugintest, nil otherwise (every read fails).
	Reads Reader
}

// FixtureContext is the context the host's self-test runs worked examples
// in, and the default of the plugintest harness.
func FixtureContext() *Context {
	return &Context{
		ClusterName: "fixture-cluster",
		ClusterPath: "root:fixture",
		Direction:   KcpToService,
		Owner:       "fixture",
	}
}

// ValueJSON is the context value key as the JSON text the host passed.
func (c *Context) ValueJSON(key string) (string, bool) {
	for _, v := range c.Values {
		if v.Key == key {
			return v.Value, true
		}
	}
	return "", false
}

// Value is the context value key, parsed (objects as map[string]any,
// numbers as json.Number); false when no earlier step set it.
func (c *Context) Value(key string) (any, bool) {
	text, ok := c.ValueJSON(key)
	if !ok {
		return nil, false
	}
	v, err := parseJSON([]byte(text))
	if err != nil {
		return nil, false
	}
	return v, true
}

// ValueInto decodes the context value key into target (a pointer) and
// reports whether it was set. A value that does not fit target is an
// invalid-input error naming the key.
func (c *Context) ValueInto(key string, target any) (bool, error) {
	text, ok := c.ValueJSON(key)
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal([]byte(text), target); err != nil {
		return true, Errorf(InvalidInput, "context value %q: %v", key, err)
	}
	return true, nil
}

// ObjectName is where a namer puts an object on the service cluster.
type ObjectName struct {
	Name string
	// Namespace is "" for cluster-scoped objects.
	Namespace string
}
