// Package rules holds the rules of contract 0.2 that the host applies and
// plugintest applies the same way: Kubernetes label selectors (for list
// reads) and the checks and bounds on a call's report. It follows
// host/runtime/src/rules.rs; a selector or report that passes here passes
// the host.
package rules

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Requirement is one requirement of a label selector.
type Requirement struct {
	// Op is "exists", "!exists", "in", "notin", "gt" or "lt".
	Op     string
	Key    string
	Values []string
	N      int64
}

func (r *Requirement) matches(labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Op {
	case "exists":
		return ok
	case "!exists":
		return !ok
	case "in":
		return ok && contains(r.Values, v)
	case "notin":
		return !ok || !contains(r.Values, v)
	case "gt", "lt":
		if !ok {
			return false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		if r.Op == "gt" {
			return n > r.N
		}
		return n < r.N
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Selector is a parsed Kubernetes label selector: all its requirements must
// hold. The empty selector matches everything.
type Selector struct{ Requirements []Requirement }

// Matches reports whether labels satisfy every requirement.
func (s *Selector) Matches(labels map[string]string) bool {
	for i := range s.Requirements {
		if !s.Requirements[i].matches(labels) {
			return false
		}
	}
	return true
}

const syntax = "key, !key, key=value, key==value, key!=value, key in (a,b), key notin (a,b), key>n, key<n"

// ParseSelector parses text (kubectl -l syntax); the error quotes the
// requirement that is wrong.
func ParseSelector(text string) (*Selector, error) {
	s := &Selector{}
	if strings.TrimSpace(text) == "" {
		return s, nil
	}
	parts, err := splitRequirements(text)
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		r, err := parseRequirement(p)
		if err != nil {
			return nil, err
		}
		s.Requirements = append(s.Requirements, r)
	}
	return s, nil
}

func splitRequirements(text string) ([]string, error) {
	var parts []string
	depth, start := 0, 0
	for i, c := range text {
		switch c {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return nil, fmt.Errorf("label selector %q: unbalanced ')'", text)
			}
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, text[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("label selector %q: unbalanced '('", text)
	}
	parts = append(parts, text[start:])
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("label selector %q: empty requirement (a stray comma?)", text)
		}
	}
	return parts, nil
}

func parseRequirement(part string) (Requirement, error) {
	p := strings.TrimSpace(part)
	bad := func(why string) (Requirement, error) {
		return Requirement{}, fmt.Errorf("label selector requirement %q: %s", p, why)
	}
	if open := strings.Index(p, "("); open >= 0 {
		inner, ok := strings.CutSuffix(p[open+1:], ")")
		if !ok {
			return bad("a value list must end with ')'")
		}
		head := strings.TrimRight(p[:open], " \t")
		i := strings.LastIndexAny(head, " \t")
		if i < 0 {
			return bad("expected one of " + syntax)
		}
		key, op := strings.TrimSpace(head[:i]), head[i+1:]
		if op != "in" && op != "notin" {
			return bad("expected one of " + syntax)
		}
		k, err := labelKey(key)
		if err != nil {
			return bad(err.Error())
		}
		if strings.TrimSpace(inner) == "" {
			return bad(op + " needs at least one value")
		}
		var values []string
		for _, v := range strings.Split(inner, ",") {
			lv, err := labelValue(strings.TrimSpace(v))
			if err != nil {
				return bad(err.Error())
			}
			values = append(values, lv)
		}
		return Requirement{Op: op, Key: k, Values: values}, nil
	}
	for _, op := range []string{"!=", "==", "=", ">", "<"} {
		at := strings.Index(p, op)
		if at < 0 {
			continue
		}
		k, err := labelKey(strings.TrimSpace(p[:at]))
		if err != nil {
			return bad(err.Error())
		}
		value := strings.TrimSpace(p[at+len(op):])
		switch op {
		case ">", "<":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return bad(fmt.Sprintf("%s needs an integer, not %q", op, value))
			}
			if op == ">" {
				return Requirement{Op: "gt", Key: k, N: n}, nil
			}
			return Requirement{Op: "lt", Key: k, N: n}, nil
		}
		v, err := labelValue(value)
		if err != nil {
			return bad(err.Error())
		}
		if op == "!=" {
			return Requirement{Op: "notin", Key: k, Values: []string{v}}, nil
		}
		return Requirement{Op: "in", Key: k, Values: []string{v}}, nil
	}
	if key, ok := strings.CutPrefix(p, "!"); ok {
		k, err := labelKey(strings.TrimSpace(key))
		if err != nil {
			return bad(err.Error())
		}
		return Requirement{Op: "!exists", Key: k}, nil
	}
	if strings.ContainsAny(p, " \t") {
		return bad("expected one of " + syntax)
	}
	k, err := labelKey(p)
	if err != nil {
		return bad(err.Error())
	}
	return Requirement{Op: "exists", Key: k}, nil
}

func labelKey(key string) (string, error) {
	prefix, name, hasPrefix := "", key, false
	if i := strings.LastIndex(key, "/"); i >= 0 {
		prefix, name, hasPrefix = key[:i], key[i+1:], true
	}
	if hasPrefix && !isDNSSubdomain(prefix) {
		return "", fmt.Errorf("%q is not a valid label key: its prefix %q must be a DNS subdomain", key, prefix)
	}
	if !IsLabelName(name) {
		return "", fmt.Errorf("%q is not a valid label key (at most 63 letters, digits, '-', '_', '.', starting and ending with a letter or digit, after an optional DNS prefix and '/')", key)
	}
	return key, nil
}

func labelValue(v string) (string, error) {
	if v == "" || IsLabelName(v) {
		return v, nil
	}
	return "", fmt.Errorf("%q is not a valid label value (at most 63 letters, digits, '-', '_', '.', starting and ending with a letter or digit)", v)
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// IsLabelName: 1 to 63 of [A-Za-z0-9_.-], starting and ending alphanumeric.
func IsLabelName(s string) bool {
	if len(s) == 0 || len(s) > 63 || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	lowerAlnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	if !lowerAlnum(s[0]) || !lowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !lowerAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

func isDNSSubdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !isDNSLabel(l) {
			return false
		}
	}
	return true
}

// Bounds are the host's limits on one call's report.
type Bounds struct {
	MaxBytes, MaxResults, MaxConditions, MaxContextKeys int
}

// DefaultBounds are the host's defaults: 64 KiB, 32 results, 16
// conditions, 32 context values.
var DefaultBounds = Bounds{MaxBytes: 64 << 10, MaxResults: 32, MaxConditions: 16, MaxContextKeys: 32}

// MaxConditionMessage is the longest condition message Kubernetes accepts.
const MaxConditionMessage = 32768

// Result, Condition and Entry are a report's parts as plain strings.
type (
	Result    struct{ Reason, Message string }
	Condition struct{ Type, Status, Reason, Message string }
	Entry     struct{ Key, Value string }
)

// CheckReport checks a report as the host does: size and counts within
// bounds, reasons and condition types as Kubernetes validates them,
// statuses True/False/Unknown, context keys well formed, set once and not
// among the incoming values, context values JSON. The error names the
// field (report.conditions[0].status) and the fix.
func CheckReport(results []Result, conditions []Condition, setContext []Entry, incoming func(string) bool, b Bounds) error {
	size := 0
	for _, r := range results {
		size += len(r.Reason) + len(r.Message)
	}
	for _, c := range conditions {
		size += len(c.Type) + len(c.Status) + len(c.Reason) + len(c.Message)
	}
	for _, e := range setContext {
		size += len(e.Key) + len(e.Value)
	}
	if size > b.MaxBytes {
		return fmt.Errorf("the report is %d bytes, over the limit of %d bytes; return shorter messages or fewer results, conditions and context values", size, b.MaxBytes)
	}
	for _, c := range []struct {
		field  string
		n, max int
	}{{"results", len(results), b.MaxResults}, {"conditions", len(conditions), b.MaxConditions}, {"set-context", len(setContext), b.MaxContextKeys}} {
		if c.n > c.max {
			return fmt.Errorf("report.%s has %d entries, over the limit of %d; return at most %d", c.field, c.n, c.max, c.max)
		}
	}
	for i, r := range results {
		if err := checkReason(fmt.Sprintf("report.results[%d].reason", i), r.Reason); err != nil {
			return err
		}
	}
	for i, c := range conditions {
		at := fmt.Sprintf("report.conditions[%d]", i)
		if err := checkConditionType(at+".type", c.Type); err != nil {
			return err
		}
		if c.Status != "True" && c.Status != "False" && c.Status != "Unknown" {
			return fmt.Errorf("%s.status is %q; it must be \"True\", \"False\" or \"Unknown\" (capitalised, as in Kubernetes conditions)", at, c.Status)
		}
		if err := checkReason(at+".reason", c.Reason); err != nil {
			return err
		}
		if len(c.Message) > MaxConditionMessage {
			return fmt.Errorf("%s.message is %d bytes; Kubernetes accepts at most %d", at, len(c.Message), MaxConditionMessage)
		}
	}
	for i, e := range setContext {
		at := fmt.Sprintf("report.set-context[%d]", i)
		if err := checkContextKey(at+".key", e.Key); err != nil {
			return err
		}
		if incoming(e.Key) {
			return fmt.Errorf("%s.key %q was already set by an earlier step of this chain; each context key has one owner: read it from the context's values instead, or set a key of your own", at, e.Key)
		}
		for j := 0; j < i; j++ {
			if setContext[j].Key == e.Key {
				return fmt.Errorf("%s.key %q is set twice in this report (first at report.set-context[%d]); set each key once", at, e.Key, j)
			}
		}
		if !json.Valid([]byte(e.Value)) {
			return fmt.Errorf("%s.value for %q is not valid JSON; context values are JSON text (a string value is written with its quotes: \"\\\"text\\\"\")", at, e.Key)
		}
	}
	return nil
}

func checkReason(at, reason string) error {
	if reason == "" {
		return fmt.Errorf("%s is empty; give a CamelCase reason such as \"SubnetMissing\"", at)
	}
	ok := len(reason) <= 1024 && (reason[0] >= 'a' && reason[0] <= 'z' || reason[0] >= 'A' && reason[0] <= 'Z')
	last := reason[len(reason)-1]
	ok = ok && last != ',' && last != ':'
	for i := 0; ok && i < len(reason); i++ {
		c := reason[i]
		ok = alnum(c) || c == '_' || c == ',' || c == ':'
	}
	if !ok {
		return fmt.Errorf("%s %q is not a valid reason; use CamelCase letters and digits (at most 1024, starting with a letter), such as \"SubnetMissing\"", at, reason)
	}
	return nil
}

func checkConditionType(at, t string) error {
	if t == "" {
		return fmt.Errorf("%s is empty; give a CamelCase condition type such as \"SubnetResolved\"", at)
	}
	prefix, name, hasPrefix := "", t, false
	if i := strings.LastIndex(t, "/"); i >= 0 {
		prefix, name, hasPrefix = t[:i], t[i+1:], true
	}
	if len(t) > 316 || (hasPrefix && !isDNSSubdomain(prefix)) || !IsLabelName(name) {
		return fmt.Errorf("%s %q is not a valid condition type; use CamelCase letters and digits (at most 63, optionally after a DNS prefix and '/'), such as \"SubnetResolved\"", at, t)
	}
	return nil
}

func checkContextKey(at, key string) error {
	ok := key != "" && len(key) <= 253
	for i := 0; ok && i < len(key); i++ {
		c := key[i]
		ok = alnum(c) || c == '-' || c == '_' || c == '.' || c == '/'
	}
	if !ok {
		return fmt.Errorf("%s %q is not a valid context key; use 1 to 253 letters, digits, '-', '_', '.' and '/' (e.g. \"example.com/subnet\")", at, key)
	}
	return nil
}
