package plugin

import "fmt"

// ReadErrorKind is the case of the contract's read-error variant.
type ReadErrorKind uint8

const (
	// ReadNotAllowed: the read is not declared in Info.Reads or not allowed
	// by the WasmPlugin or PublishedResource (or over a per-call limit); the
	// message says which.
	ReadNotAllowed ReadErrorKind = iota
	// ReadNotServed: the API server does not serve that resource.
	ReadNotServed
	// ReadUnavailable: the host could not read it now (its cache is not
	// synced, the server does not answer); the call may be retried.
	ReadUnavailable
	// ReadInvalid: the request itself is malformed (a bad label selector, an
	// empty name).
	ReadInvalid
)

// ReadError says why a read was not answered. Returned from a role
// function, a not-allowed or not-served read fails the call as
// invalid-config, the others as internal ([KindOf]).
type ReadError struct {
	Kind    ReadErrorKind
	Message string
}

func (e *ReadError) Error() string {
	switch e.Kind {
	case ReadNotAllowed:
		return "read not allowed: " + e.Message
	case ReadNotServed:
		return "resource not served: " + e.Message
	case ReadUnavailable:
		return "read unavailable: " + e.Message
	}
	return "invalid read: " + e.Message
}

// Reader answers a call's reads: the host in a component of contract 0.2,
// read fixtures in plugintest. Objects are JSON text. An empty namespace or
// label selector means none.
type Reader interface {
	Get(side Side, resource Resource, namespace, name string) (object string, found bool, err error)
	List(side Side, resource Resource, namespace, labelSelector string) ([]string, error)
}

func (c *Context) reader() (Reader, error) {
	if c == nil || c.Reads == nil {
		return nil, &Error{Kind: Internal, Message: "no reads are answered in this call: reads need " +
			"contract 0.2 (a plugin registered with syncweave.dev/sdk/go/v02/<role>), and in a " +
			"native test they are answered by plugintest from read fixtures (plugintest.Call.Reads)"}
	}
	return c.Reads, nil
}

// Get reads one object by name (contract 0.2); nil when it does not exist.
// namespace is "" for cluster-scoped resources. Only reads declared in
// Info.Reads (and allowed by the operator) are answered.
//
//	ns, err := ctx.Get(plugin.Kcp, plugin.CoreResource("v1", "namespaces"), "", obj.Namespace())
func (c *Context) Get(side Side, resource Resource, namespace, name string) (*Object, error) {
	r, err := c.reader()
	if err != nil {
		return nil, err
	}
	text, found, err := r.Get(side, resource, namespace, name)
	if err != nil || !found {
		return nil, err
	}
	return parseRead(text)
}

// List reads the objects of a resource (contract 0.2): in namespace (""
// for every namespace the operator allows, or the cluster-scoped objects)
// and matching labelSelector (Kubernetes syntax, "app=db,tier!=cache";
// "" for all).
func (c *Context) List(side Side, resource Resource, namespace, labelSelector string) ([]*Object, error) {
	r, err := c.reader()
	if err != nil {
		return nil, err
	}
	texts, err := r.List(side, resource, namespace, labelSelector)
	if err != nil {
		return nil, err
	}
	out := make([]*Object, 0, len(texts))
	for _, t := range texts {
		o, err := parseRead(t)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func parseRead(text string) (*Object, error) {
	o, err := ParseObject(text)
	if err != nil {
		return nil, &ReadError{Kind: ReadUnavailable, Message: fmt.Sprintf("the host answered with a bad object: %v", err)}
	}
	return o, nil
}
