package plugin

import (
	"errors"
	"strings"
	"testing"
)

const cm = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"default","labels":{"app":"web"}},"data":{"z":"<&>",  "a":  1.0}}`

func TestUntouchedFieldsAreWrittenAsRead(t *testing.T) {
	o, err := ParseObject(cm)
	if err != nil {
		t.Fatal(err)
	}
	o.SetLabel("team", "platform")
	got, _ := o.JSON()
	want := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"app":"web","team":"platform"},"name":"cfg","namespace":"default"},"data":{"z":"<&>",  "a":  1.0}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if o.fields[3].parsed {
		t.Error("data was decoded although no path touched it")
	}
}

func TestObjectAccessors(t *testing.T) {
	o, _ := ParseObject(cm)
	if o.Name() != "cfg" || o.Namespace() != "default" || o.Kind() != "ConfigMap" || o.APIVersion() != "v1" {
		t.Error(o)
	}
	if v, ok := o.Label("app"); !ok || v != "web" {
		t.Error(v, ok)
	}
	if _, ok := o.Annotation("x"); ok {
		t.Error("no annotations")
	}
	o.SetAnnotation("example.com/owner", "alice")
	if v, _ := o.Annotation("example.com/owner"); v != "alice" {
		t.Error(v)
	}
	if !o.DeleteLabel("app") || o.DeleteLabel("app") {
		t.Error("DeleteLabel reports what it removed")
	}
	if n, ok := o.GetInt("data.a"); !ok || n != 1 {
		t.Error(n, ok)
	}
	if err := o.Set("spec.replicas", 3); err != nil {
		t.Fatal(err)
	}
	if n, _ := o.GetInt("spec.replicas"); n != 3 {
		t.Error(n)
	}
	if ok, _ := o.Delete("spec"); !ok || o.Has("spec") {
		t.Error("spec deleted")
	}
	if got := strings.Join(o.Keys(), ","); got != "apiVersion,kind,metadata,data" {
		t.Error(got)
	}
	if got := o.GetString("m*.name"); got != "cfg" {
		t.Errorf("wildcards match top-level keys in order: %q", got)
	}
}

func TestObjectPatches(t *testing.T) {
	o, _ := ParseObject(cm)
	if err := o.MergePatch(`{"metadata":{"labels":{"app":null,"b":"c"}},"data":null,"spec":{"x":1}}`); err != nil {
		t.Fatal(err)
	}
	if got := o.String(); got != `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"b":"c"},"name":"cfg","namespace":"default"},"spec":{"x":1}}` {
		t.Error(got)
	}
	err := o.JSONPatch(`[{"op":"add","path":"/spec/y","value":2},{"op":"test","path":"/spec/x","value":2}]`)
	if err == nil || !strings.Contains(err.Error(), "operation 1 (test /spec/x)") {
		t.Errorf("a failed test fails the patch: %v", err)
	}
	if o.Has("spec.y") {
		t.Error("a failed patch changes nothing")
	}
	if err := o.JSONPatch(`[{"op":"move","from":"/spec/x","path":"/spec/z"},{"op":"copy","from":"/spec/z","path":"/metadata/labels/z"}]`); err != nil {
		t.Fatal(err)
	}
	if got := o.GetString("spec.z") + o.GetString("metadata.labels.z"); got != "11" || o.Has("spec.x") {
		t.Error(o)
	}
}

func TestParseObjectRefusesWhatIsNotAnObject(t *testing.T) {
	for _, bad := range []string{`[1]`, `{"a":`, `{"a":1} x`, ``, `"s"`} {
		if _, err := ParseObject(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

type labelsConfig struct {
	Labels map[string]string `json:"labels"`
	Inner  struct {
		N int `json:"n"`
	} `json:"inner"`
}

func (c *labelsConfig) Validate() error {
	for k := range c.Labels {
		if k == "" {
			return errors.New("labels: a label key must not be empty")
		}
	}
	return nil
}

func TestConfigsAreDecodedStrictlyWithTheFieldNamed(t *testing.T) {
	cfg, err := DecodeConfig[labelsConfig](`{"labels":{"team":"a"}}`)
	if err != nil || cfg.Labels["team"] != "a" {
		t.Fatal(cfg, err)
	}
	if _, err := DecodeConfig[labelsConfig](""); err != nil {
		t.Error("an absent config is the zero value:", err)
	}
	for config, want := range map[string]string{
		`{"labels":{"a":1}}`:  "config.labels: expected string, got number",
		`{"inner":{"n":"x"}}`: "config.inner.n: expected integer, got string",
		`{"lables":{}}`:       `config: unknown field "lables"`,
		`{"labels":`:          "config: not valid JSON",
		`{"labels":{"":"x"}}`: "labels: a label key must not be empty",
		`[]`:                  "config: expected object, got array",
	} {
		_, err := DecodeConfig[labelsConfig](config)
		if err == nil || !strings.Contains(err.Error(), want) || KindOf(err) != InvalidConfig {
			t.Errorf("%s: %v (kind %v), want %q", config, err, KindOf(err), want)
		}
	}
}

func TestErrorKinds(t *testing.T) {
	wrapped := Errorf(Rejected, "policy: %w", errors.New("no"))
	if KindOf(wrapped) != Rejected || wrapped.Error() != "policy: no" || errors.Unwrap(wrapped) == nil {
		t.Error(wrapped)
	}
	if KindOf(errors.New("x")) != Internal {
		t.Error("plain errors are internal")
	}
	if KindOf(&ReadError{Kind: ReadNotAllowed}) != InvalidConfig || KindOf(&ReadError{Kind: ReadUnavailable}) != Internal {
		t.Error("read errors")
	}
	err := Guard(func() error {
		var m map[string]int
		m["boom"]++
		return nil
	})
	if KindOf(err) != Internal || !strings.Contains(err.Error(), "panic: assignment to entry in nil map") ||
		!strings.Contains(err.Error(), "object_test.go:") || !strings.Contains(err.Error(), "TestErrorKinds") {
		t.Errorf("a panic becomes an internal error naming where: %v", err)
	}
}

func TestContextValues(t *testing.T) {
	ctx := FixtureContext()
	ctx.Values = []ContextValue{{Key: "zone", Value: `"eu-1"`}, {Key: "n", Value: `{"a":[1]}`}}
	if v, ok := ctx.Value("zone"); !ok || v != "eu-1" {
		t.Error(v)
	}
	var n struct{ A []int }
	if ok, err := ctx.ValueInto("n", &n); !ok || err != nil || n.A[0] != 1 {
		t.Error(n, err)
	}
	if ok, err := ctx.ValueInto("zone", &n); !ok || KindOf(err) != InvalidInput {
		t.Error(err)
	}
	if _, ok := ctx.Value("missing"); ok {
		t.Error("missing")
	}
	if _, err := ctx.Get(Kcp, CoreResource("v1", "namespaces"), "", "x"); err == nil || !strings.Contains(err.Error(), "contract 0.2") {
		t.Errorf("no reader: %v", err)
	}
}

func TestReport(t *testing.T) {
	var r Report
	r.Warning("Missing", "m")
	r.Normal("Done", "d")
	r.Condition("Ready", ConditionFalse, "Waiting", "w")
	r.Condition("Ready", StatusOf(true), "Done", "d")
	r.SetContext("k", map[string]int{"a": 1})
	r.SetContext("k", "v")
	r.SetContext("bad", func() {})
	if len(r.Warnings()) != 1 || len(r.Normals()) != 1 || len(r.Conditions) != 1 || r.Conditions[0].Status != "True" {
		t.Error(r)
	}
	if len(r.ContextValues) != 1 || r.ContextValues[0].Value != `"v"` {
		t.Error(r.ContextValues)
	}
	if r.Err() == nil || KindOf(r.Err()) != Internal || !strings.Contains(r.Err().Error(), `SetContext("bad")`) {
		t.Error(r.Err())
	}
}
