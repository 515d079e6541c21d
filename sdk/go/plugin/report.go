package plugin

import "fmt"

// Severity says how much a result matters.
type Severity uint8

const (
	// Normal: worth telling the consumer (a Normal Event).
	Normal Severity = iota
	// Warning: something is wrong or missing, but the output is usable (a
	// Warning Event).
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "normal"
}

// ConditionStatus is a condition's status, as Kubernetes writes it.
type ConditionStatus string

const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// StatusOf is ConditionTrue or ConditionFalse.
func StatusOf(b bool) ConditionStatus {
	if b {
		return ConditionTrue
	}
	return ConditionFalse
}

// CallResult is something a call wants the consumer to know.
type CallResult struct {
	Severity Severity
	// Reason is CamelCase, as an Event's reason ("SubnetMissing").
	Reason  string
	Message string
}

// Condition is a condition the call reports on the object it handled.
type Condition struct {
	// Type is CamelCase ("SubnetResolved").
	Type    string
	Status  ConditionStatus
	Reason  string
	Message string
}

// Report is what a call of contract 0.2 returns beside its output: results
// the host turns into Events, conditions on the object, and context values
// for the later steps of a mutation chain. None of them fails the call;
// return an error for that. The host checks the report (CamelCase reasons,
// well-formed condition types and context keys, a key set by an earlier
// step is refused) and bounds it (64 KiB, 32 results, 16 conditions, 32
// context values by default); plugintest applies the same checks.
type Report struct {
	Results    []CallResult
	Conditions []Condition
	// ContextValues are the context values set (SetContext), in order;
	// Value is JSON text.
	ContextValues []ContextValue

	err error
}

// Normal adds a Normal Event: something worth telling the consumer.
func (r *Report) Normal(reason, message string) {
	r.Results = append(r.Results, CallResult{Severity: Normal, Reason: reason, Message: message})
}

// Warning adds a Warning Event: something is wrong or missing, but the
// output is usable.
func (r *Report) Warning(reason, message string) {
	r.Results = append(r.Results, CallResult{Severity: Warning, Reason: reason, Message: message})
}

// Condition reports a condition on the object; reporting the same type
// again in one call replaces it.
func (r *Report) Condition(conditionType string, status ConditionStatus, reason, message string) {
	c := Condition{Type: conditionType, Status: status, Reason: reason, Message: message}
	for i := range r.Conditions {
		if r.Conditions[i].Type == conditionType {
			r.Conditions[i] = c
			return
		}
	}
	r.Conditions = append(r.Conditions, c)
}

// SetContext passes value (anything that marshals to JSON) to the later
// steps of the chain, which read it with [Context.Value]. Setting a key
// again in one call replaces it; a key an earlier step set is refused by
// the host (each key has one owner). A value that cannot be marshalled
// fails the call as internal.
func (r *Report) SetContext(key string, value any) {
	text, err := MarshalJSON(value)
	if err != nil {
		if r.err == nil {
			r.err = &Error{Kind: Internal, Message: fmt.Sprintf("report.SetContext(%q): the value cannot be written as JSON: %v", key, err), Err: err}
		}
		return
	}
	for i := range r.ContextValues {
		if r.ContextValues[i].Key == key {
			r.ContextValues[i].Value = text
			return
		}
	}
	r.ContextValues = append(r.ContextValues, ContextValue{Key: key, Value: text})
}

// Err is the first error recording the report met (a context value that
// cannot be JSON); the SDK fails the call with it.
func (r *Report) Err() error { return r.err }

// Empty reports whether nothing was reported.
func (r *Report) Empty() bool {
	return len(r.Results) == 0 && len(r.Conditions) == 0 && len(r.ContextValues) == 0
}

// Warnings are the results of severity Warning.
func (r *Report) Warnings() []CallResult { return r.of(Warning) }

// Normals are the results of severity Normal.
func (r *Report) Normals() []CallResult { return r.of(Normal) }

func (r *Report) of(s Severity) []CallResult {
	var out []CallResult
	for _, c := range r.Results {
		if c.Severity == s {
			out = append(out, c)
		}
	}
	return out
}
