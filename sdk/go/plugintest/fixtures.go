package plugintest

import (
	"encoding/json"
	"fmt"
	"strings"

	"syncweave.dev/sdk/go/internal/rules"
	"syncweave.dev/sdk/go/plugin"
)

// MaxReads is the host's default number of reads per call.
const MaxReads = 64

type fixtureObject struct {
	side      plugin.Side
	resource  plugin.Resource
	namespace string
	name      string
	labels    map[string]string
	json      string
}

// fixtureHost answers reads from fixtures, checking them as the host does.
type fixtureHost struct {
	objects      []fixtureObject
	failures     []ReadFailure
	declarations []plugin.ReadDeclaration
	log          []string
}

func newFixtureHost(fixtures []plugin.ReadFixture, failures []ReadFailure, decls []plugin.ReadDeclaration) (*fixtureHost, error) {
	h := &fixtureHost{failures: failures, declarations: decls}
	for i, f := range fixtures {
		for j, text := range f.Objects {
			var o struct {
				Metadata struct {
					Name      string         `json:"name"`
					Namespace string         `json:"namespace"`
					Labels    map[string]any `json:"labels"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal([]byte(text), &o); err != nil {
				return nil, fmt.Errorf("plugintest: read fixture %d (%s %s), object %d: not a JSON object: %v", i, f.Side, f.Resource, j, err)
			}
			if o.Metadata.Name == "" {
				return nil, fmt.Errorf("plugintest: read fixture %d (%s %s), object %d: no metadata.name; reads find objects by it", i, f.Side, f.Resource, j)
			}
			labels := map[string]string{}
			for k, v := range o.Metadata.Labels {
				if s, ok := v.(string); ok {
					labels[k] = s
				}
			}
			h.objects = append(h.objects, fixtureObject{f.Side, f.Resource, o.Metadata.Namespace, o.Metadata.Name, labels, text})
		}
	}
	return h, nil
}

func (h *fixtureHost) admit(side plugin.Side, res plugin.Resource, what string) error {
	h.log = append(h.log, what)
	if len(h.log) > MaxReads {
		return &plugin.ReadError{Kind: plugin.ReadNotAllowed, Message: fmt.Sprintf("this call has already made %d reads, the limit per call; read less, e.g. one list with a label selector instead of many gets", MaxReads)}
	}
	declared := false
	var names []string
	for _, d := range h.declarations {
		names = append(names, fmt.Sprintf("%s %s", d.Side, d.Resource))
		declared = declared || (d.Side == side && d.Resource == res)
	}
	if !declared {
		have := "describe() declares no reads"
		if len(names) > 0 {
			have = "describe() declares reads of " + strings.Join(names, ", ")
		}
		return &plugin.ReadError{Kind: plugin.ReadNotAllowed, Message: fmt.Sprintf("the plugin may not %s: %s; add %s %s to Info.Reads to read it (the operator must allow it too)", what, have, side, res)}
	}
	for _, f := range h.failures {
		if f.Side == side && f.Resource == res {
			return f.Err
		}
	}
	return nil
}

func (h *fixtureHost) Get(side plugin.Side, res plugin.Resource, namespace, name string) (string, bool, error) {
	ns := ""
	if namespace != "" {
		ns = namespace + "/"
	}
	if err := h.admit(side, res, fmt.Sprintf("get %s %s %s%s", side, res, ns, name)); err != nil {
		return "", false, err
	}
	if name == "" {
		return "", false, &plugin.ReadError{Kind: plugin.ReadInvalid, Message: "get needs a name; use list to read several objects"}
	}
	for _, o := range h.objects {
		if o.side == side && o.resource == res && o.name == name && o.namespace == namespace {
			return o.json, true, nil
		}
	}
	return "", false, nil
}

func (h *fixtureHost) List(side plugin.Side, res plugin.Resource, namespace, selector string) ([]string, error) {
	what := fmt.Sprintf("list %s %s", side, res)
	if namespace != "" {
		what += " in " + namespace
	}
	if selector != "" {
		what += fmt.Sprintf(" matching %q", selector)
	}
	if err := h.admit(side, res, what); err != nil {
		return nil, err
	}
	sel, err := rules.ParseSelector(selector)
	if err != nil {
		return nil, &plugin.ReadError{Kind: plugin.ReadInvalid, Message: err.Error()}
	}
	out := []string{}
	for _, o := range h.objects {
		if o.side == side && o.resource == res && (namespace == "" || o.namespace == namespace) && sel.Matches(o.labels) {
			out = append(out, o.json)
		}
	}
	return out, nil
}

// checkReport applies the host's rules and default bounds to a report.
func checkReport(r *plugin.Report, ctx *plugin.Context) error {
	if r == nil {
		return nil
	}
	results := make([]rules.Result, len(r.Results))
	for i, c := range r.Results {
		results[i] = rules.Result{Reason: c.Reason, Message: c.Message}
	}
	conditions := make([]rules.Condition, len(r.Conditions))
	for i, c := range r.Conditions {
		conditions[i] = rules.Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message}
	}
	entries := make([]rules.Entry, len(r.ContextValues))
	for i, e := range r.ContextValues {
		entries[i] = rules.Entry{Key: e.Key, Value: e.Value}
	}
	incoming := func(key string) bool {
		_, ok := ctx.ValueJSON(key)
		return ok
	}
	if err := rules.CheckReport(results, conditions, entries, incoming, rules.DefaultBounds); err != nil {
		return badOutput("the host would refuse this report: %v", err)
	}
	return nil
}
