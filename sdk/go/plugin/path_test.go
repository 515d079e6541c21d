package plugin

import (
	"encoding/json"
	"reflect"
	"testing"
)

func doc(t *testing.T, text string) any {
	t.Helper()
	v, err := ParseJSON(text)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func text(t *testing.T, v any) string {
	t.Helper()
	s, err := MarshalJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPathReads(t *testing.T) {
	v := doc(t, `{"metadata":{"name":"a","labels":{"app":"web","example.com/team":"x"}},
		"spec":{"items":[{"name":"one","n":1},{"name":"two"}],"2313":"key","ok":true,"none":null}}`)
	cases := []struct {
		path string
		want string
		ok   bool
	}{
		{"metadata.name", `"a"`, true},
		{`metadata.labels.example\.com/team`, `"x"`, true},
		{"metadata.labels.a*", `"web"`, true},
		{"metadata.labels.ap?", `"web"`, true},
		{"metadata.labels.nope", "", false},
		{"spec.items.1.name", `"two"`, true},
		{"spec.items.5", "", false},
		{"spec.items.#", `2`, true},
		{"spec.items.#.name", `["one","two"]`, true},
		{"spec.items.#.n", `[1]`, true},
		{"spec.2313", `"key"`, true},
		{"spec.:2313", `"key"`, true},
		{"spec.none", `null`, true},
		{"metadata.name.x", "", false},
	}
	for _, c := range cases {
		got, ok := GetPath(v, c.path)
		if ok != c.ok {
			t.Errorf("%s: found = %v, want %v", c.path, ok, c.ok)
			continue
		}
		if ok && text(t, got) != c.want {
			t.Errorf("%s = %s, want %s", c.path, text(t, got), c.want)
		}
	}
	for path, want := range map[string]string{
		"spec.ok": "true", "spec.items.0.n": "1", "spec.none": "", "missing": "",
		"spec.items.0": `{"n":1,"name":"one"}`, "metadata.name": "a",
	} {
		if got := GetPathString(v, path); got != want {
			t.Errorf("GetPathString(%s) = %q, want %q", path, got, want)
		}
	}
}

func TestPathWrites(t *testing.T) {
	v := doc(t, `{"spec":{"list":[1],"scalar":3}}`)
	steps := []struct {
		path  string
		value any
	}{
		{"spec.list.-1", 2},
		{"spec.list.4", "x"},
		{"spec.new.0.name", "n"},
		{"spec.obj.:0", "k"},
		{"spec.scalar.inner", true},
		{`metadata.annotations.example\.com/owner`, "me"},
		{"metadata.labels", map[string]string{"a": "b"}},
		{"metadata.labels.c", "d"},
	}
	var err error
	for _, s := range steps {
		if v, err = SetPath(v, s.path, s.value); err != nil {
			t.Fatalf("SetPath(%s): %v", s.path, err)
		}
	}
	want := `{"metadata":{"annotations":{"example.com/owner":"me"},"labels":{"a":"b","c":"d"}},` +
		`"spec":{"list":[1,2,null,null,"x"],"new":[{"name":"n"}],"obj":{"0":"k"},"scalar":{"inner":true}}}`
	if got := text(t, v); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, bad := range []string{"", "spec.*", "spec.#", "spec.list.name"} {
		if _, err := SetPath(v, bad, 1); err == nil {
			t.Errorf("SetPath(%q) should fail", bad)
		}
	}
	v, old, ok, err := DeletePath(v, "spec.list.-1")
	if err != nil || !ok || old != "x" {
		t.Errorf("delete last: %v %v %v", old, ok, err)
	}
	v, _, ok, _ = DeletePath(v, "spec.list.0")
	if !ok || text(t, mustGet(t, v, "spec.list")) != `[2,null,null]` {
		t.Errorf("delete index: %s", text(t, v))
	}
	if _, _, ok, _ = DeletePath(v, "spec.nothing.here"); ok {
		t.Error("deleting a missing path reports nothing removed")
	}
}

func mustGet(t *testing.T, v any, path string) any {
	t.Helper()
	got, ok := GetPath(v, path)
	if !ok {
		t.Fatalf("%s missing", path)
	}
	return got
}

func TestKeyEscapesAPathSegment(t *testing.T) {
	for _, k := range []string{"example.com/team", "a*b", "#", ":1", "plain"} {
		v := map[string]any{}
		if _, err := SetPath(v, "x."+Key(k), "v"); err != nil {
			t.Fatal(err)
		}
		if got, ok := GetPath(v, "x."+Key(k)); !ok || got != "v" {
			t.Errorf("%q: %v %v", k, got, ok)
		}
		if !reflect.DeepEqual(v, map[string]any{"x": map[string]any{k: "v"}}) {
			t.Errorf("%q: stored as %v", k, v)
		}
	}
}

func TestNumbersAreKeptExactly(t *testing.T) {
	v := doc(t, `{"big":12345678901234567890,"f":1.50,"e":1e3}`)
	if got := text(t, v); got != `{"big":12345678901234567890,"e":1e3,"f":1.50}` {
		t.Error(got)
	}
	if n, ok := GetPath(v, "big"); !ok || n.(json.Number).String() != "12345678901234567890" {
		t.Error(n)
	}
}
