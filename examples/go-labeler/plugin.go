// go-labeler: a mutator of contract 0.2, written with the syncweave Go SDK.
// On the way from kcp to the service cluster it reads the consumer's
// Namespace of the object (in kcp) and copies its labels onto the copy,
// each key under a prefix from the config.
//
//	{"prefix": "consumer.example.com/", "keys": ["team", "cost-center"]}
//
// keys is optional: without it every label whose key has no prefix of its
// own is copied (kubernetes.io/metadata.name and other prefixed, system
// labels are left out unless listed). A Namespace that does not exist is a
// warning (the object is synced without its labels); a label whose prefixed
// key is not a valid label key is skipped with a warning.
package main

import (
	"strings"

	"syncweave.dev/sdk/go/hostlog"
	"syncweave.dev/sdk/go/plugin"
	"syncweave.dev/sdk/go/v02/mutator"
)

// Namespaces is the resource the plugin reads: core/v1 namespaces in kcp.
var Namespaces = plugin.CoreResource("v1", "namespaces")

// Config is decoded strictly by the SDK, then checked by Validate.
type Config struct {
	// Prefix goes in front of every copied key; with a '/' it is the key's
	// DNS prefix ("consumer.example.com/"), without one it starts the name
	// ("ns-").
	Prefix string `json:"prefix"`
	// Keys lists the labels to copy; empty: every label without a prefix.
	Keys []string `json:"keys"`
}

// Validate names the field that is wrong.
func (c *Config) Validate() error {
	if c.Prefix == "" {
		return plugin.Errorf(plugin.InvalidConfig, `prefix: missing; set the prefix of the copied keys, e.g. {"prefix": "consumer.example.com/"}`)
	}
	if i := strings.Index(c.Prefix, "/"); i >= 0 {
		if i != len(c.Prefix)-1 || !validPrefix(c.Prefix[:i]) {
			return plugin.Errorf(plugin.InvalidConfig, "prefix: %q must be a DNS subdomain followed by '/' (e.g. consumer.example.com/), or a name prefix without '/'", c.Prefix)
		}
	}
	for i, k := range c.Keys {
		if k == "" {
			return plugin.Errorf(plugin.InvalidConfig, "keys[%d]: must not be empty", i)
		}
	}
	return nil
}

const namespaceObject = `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop",
	"labels": {"team": "web", "cost-center": "cc-7", "kubernetes.io/metadata.name": "shop"}}}`

// Plugin is the labeler.
var Plugin = &mutator.Plugin[Config]{
	Info: plugin.Info{
		Name:        "go-labeler",
		Version:     "0.1.0",
		Description: "Copies the labels of the object's Namespace in kcp onto its copy, under a prefix",
		ConfigSchema: `{"type": "object", "required": ["prefix"], "additionalProperties": false, "properties": {
			"prefix": {"type": "string", "minLength": 1},
			"keys": {"type": "array", "items": {"type": "string", "minLength": 1}}}}`,
		Reads: []plugin.ReadDeclaration{{
			Side: plugin.Kcp, Resource: Namespaces,
			Purpose: "copies the labels of the object's Namespace onto its copy",
		}},
		Examples: []plugin.Example{
			{
				Name:   "copies the namespace's labels under a prefix",
				Config: `{"prefix": "consumer.example.com/"}`,
				Input: `{"apiVersion": "example.com/v1", "kind": "CronTab",
					"metadata": {"name": "backup", "namespace": "shop", "labels": {"app": "db"}}}`,
				Expected: `{"apiVersion": "example.com/v1", "kind": "CronTab",
					"metadata": {"name": "backup", "namespace": "shop", "labels": {"app": "db",
						"consumer.example.com/team": "web", "consumer.example.com/cost-center": "cc-7"}}}`,
				Reads: []plugin.ReadFixture{{Side: plugin.Kcp, Resource: Namespaces, Objects: []string{namespaceObject}}},
			},
			{
				Name:   "only the listed keys, system labels included",
				Config: `{"prefix": "ns-", "keys": ["team", "kubernetes.io/metadata.name"]}`,
				Input:  `{"apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "backup", "namespace": "shop"}}`,
				Expected: `{"apiVersion": "example.com/v1", "kind": "CronTab", "metadata": {"name": "backup", "namespace": "shop",
					"labels": {"ns-team": "web", "kubernetes.io/ns-metadata.name": "shop"}}}`,
				Reads: []plugin.ReadFixture{{Side: plugin.Kcp, Resource: Namespaces, Objects: []string{namespaceObject}}},
			},
		},
	},
	Mutate: mutate,
}

func mutate(ctx *plugin.Context, cfg Config, obj, _ *plugin.Object, report *plugin.Report) error {
	if ctx.Direction != plugin.KcpToService || obj.Namespace() == "" {
		return nil // status on its way back, or a cluster-scoped object: no Namespace to copy
	}
	ns, err := ctx.Get(plugin.Kcp, Namespaces, "", obj.Namespace())
	if err != nil {
		return err
	}
	if ns == nil {
		report.Warning("NamespaceNotFound", "namespace "+obj.Namespace()+" does not exist in "+ctx.ClusterName+"; no labels copied")
		return nil
	}
	labels := ns.Labels()
	keys := cfg.Keys
	if len(keys) == 0 {
		for k := range labels {
			if !strings.Contains(k, "/") {
				keys = append(keys, k)
			}
		}
	}
	copied := 0
	for _, k := range keys {
		value, ok := labels[k]
		if !ok {
			continue
		}
		key := prefixed(cfg.Prefix, k)
		if !validKey(key) {
			report.Warning("LabelSkipped", "label "+k+" of namespace "+ns.Name()+" would be "+key+", which is not a valid label key")
			continue
		}
		obj.SetLabel(key, value)
		copied++
	}
	hostlog.Debugf("copied %d labels of namespace %s onto %s", copied, ns.Name(), obj.Name())
	return nil
}

// prefixed puts prefix in front of key: a DNS prefix ("a.b/") replaces
// none, a name prefix ("ns-") goes in front of the name part.
func prefixed(prefix, key string) string {
	if strings.HasSuffix(prefix, "/") {
		return prefix + key
	}
	if i := strings.LastIndex(key, "/"); i >= 0 {
		return key[:i+1] + prefix + key[i+1:]
	}
	return prefix + key
}

func validKey(key string) bool {
	name := key
	if i := strings.LastIndex(key, "/"); i >= 0 {
		if !validPrefix(key[:i]) {
			return false
		}
		name = key[i+1:]
	}
	if name == "" || len(name) > 63 || !alnum(name[0]) || !alnum(name[len(name)-1]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func validPrefix(p string) bool {
	if p == "" || len(p) > 253 {
		return false
	}
	for _, part := range strings.Split(p, ".") {
		if part == "" || len(part) > 63 || part[0] == '-' || part[len(part)-1] == '-' {
			return false
		}
		for i := 0; i < len(part); i++ {
			if c := part[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

func init() { mutator.Register(Plugin) }

func main() {}
