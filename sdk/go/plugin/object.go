package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Object is a Kubernetes object (any JSON object) that a plugin reads and
// edits by path. It is read lazily: parsing only scans the top level, and a
// top-level field is decoded the first time a path touches it. Fields the
// plugin leaves alone are written back byte for byte, in their order, so a
// mutator that only touches metadata never decodes spec or data (the host
// sends apiVersion, kind and metadata first).
//
// Values inside are JSON values: map[string]any, []any, string, bool, nil
// and json.Number for numbers read from the input.
type Object struct {
	fields []objField
}

type objField struct {
	key    string
	raw    []byte
	val    any
	parsed bool
}

// ParseObject reads a JSON object.
func ParseObject(text string) (*Object, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a JSON object")
	}
	o := &Object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		if f := o.field(key); f != nil {
			*f = objField{key: key, raw: raw}
		} else {
			o.fields = append(o.fields, objField{key: key, raw: raw})
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("not valid JSON: unexpected data after the object")
	}
	return o, nil
}

// NewObject makes an Object of m (its keys in sorted order). m's values
// must be JSON values or marshal to JSON.
func NewObject(m map[string]any) (*Object, error) {
	o := &Object{}
	return o, o.Replace(m)
}

func (o *Object) field(key string) *objField {
	for i := range o.fields {
		if o.fields[i].key == key {
			return &o.fields[i]
		}
	}
	return nil
}

func (f *objField) value() any {
	if !f.parsed {
		v, err := parseJSON(f.raw)
		if err != nil {
			// ParseObject checked the text; keep the raw value as a string
			// rather than lose it.
			v = string(f.raw)
		}
		f.val, f.raw, f.parsed = v, nil, true
	}
	return f.val
}

// Keys are the object's top-level keys, in order.
func (o *Object) Keys() []string {
	keys := make([]string, len(o.fields))
	for i, f := range o.fields {
		keys[i] = f.key
	}
	return keys
}

// Get is the value at path (see [GetPath] for the syntax) and whether
// something is there. Editing a returned map or slice edits the object.
func (o *Object) Get(path string) (any, bool) {
	segs := parsePath(path)
	first := &segs[0]
	if first.hash {
		return nil, false
	}
	for i := range o.fields {
		if first.matches(o.fields[i].key) {
			return getIn(o.fields[i].value(), segs[1:])
		}
	}
	return nil, false
}

// Has reports whether path names something (a null counts).
func (o *Object) Has(path string) bool {
	_, ok := o.Get(path)
	return ok
}

// GetString is the value at path as a string ([GetPathString]): "" when
// missing or null.
func (o *Object) GetString(path string) string {
	v, ok := o.Get(path)
	if !ok {
		return ""
	}
	return stringOf(v)
}

// GetInt is the value at path as an integer, if it is a number without a
// fraction (or a string of one).
func (o *Object) GetInt(path string) (int64, bool) {
	v, ok := o.Get(path)
	if !ok {
		return 0, false
	}
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, true
		}
		f, err := x.Float64()
		return int64(f), err == nil && f == float64(int64(f))
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	case float64:
		return int64(x), x == float64(int64(x))
	case int:
		return int64(x), true
	case int64:
		return x, true
	case int32:
		return int64(x), true
	}
	return 0, false
}

// GetBool is the value at path if it is a boolean.
func (o *Object) GetBool(path string) (bool, bool) {
	v, ok := o.Get(path)
	b, isBool := v.(bool)
	return b, ok && isBool
}

// Set writes value at path, creating what is missing ([SetPath]). Values
// of other types than the JSON ones (map[string]string, structs, ...) are
// stored as their JSON form.
func (o *Object) Set(path string, value any) error {
	segs := parsePath(path)
	if err := checkWritable(path, segs); err != nil {
		return err
	}
	norm, err := normalize(value)
	if err != nil {
		return &PathError{path, fmt.Sprintf("path %q: the value cannot be written as JSON: %v", path, err)}
	}
	f := o.field(segs[0].key)
	if f == nil {
		o.fields = append(o.fields, objField{key: segs[0].key, parsed: true})
		f = &o.fields[len(o.fields)-1]
	}
	if len(segs) == 1 {
		f.val, f.raw, f.parsed = norm, nil, true
		return nil
	}
	cur := f.value()
	if !isContainer(cur) {
		cur = containerFor(&segs[1])
	}
	nv, err := setIn(cur, segs, 1, path, norm)
	if err != nil {
		return err
	}
	f.val = nv
	return nil
}

// Delete removes what path names and reports whether something was there.
func (o *Object) Delete(path string) (bool, error) {
	segs := parsePath(path)
	if err := checkWritable(path, segs); err != nil {
		return false, err
	}
	for i := range o.fields {
		f := &o.fields[i]
		if f.key != segs[0].key {
			continue
		}
		if len(segs) == 1 {
			o.fields = append(o.fields[:i], o.fields[i+1:]...)
			return true, nil
		}
		nv, _, ok := deleteIn(f.value(), segs, 1)
		f.val = nv
		return ok, nil
	}
	return false, nil
}

// Map is the whole object as a map (every field decoded). The map's
// values are the object's own: editing a nested map edits the object, but
// adding or removing top-level keys of the map does not (use [Object.Set]
// or [Object.Replace]).
func (o *Object) Map() (map[string]any, error) {
	m := make(map[string]any, len(o.fields))
	for i := range o.fields {
		m[o.fields[i].key] = o.fields[i].value()
	}
	return m, nil
}

// Replace makes m the object's content (keys in sorted order).
func (o *Object) Replace(m map[string]any) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fields := make([]objField, 0, len(keys))
	for _, k := range keys {
		v, err := normalize(m[k])
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		fields = append(fields, objField{key: k, val: v, parsed: true})
	}
	o.fields = fields
	return nil
}

// Clone is a deep copy.
func (o *Object) Clone() *Object {
	text, err := o.JSON()
	if err != nil {
		panic(err)
	}
	c, err := ParseObject(text)
	if err != nil {
		panic(err)
	}
	return c
}

// JSON writes the object as compact JSON: untouched fields as they were
// read, in their order.
func (o *Object) JSON() (string, error) {
	b, err := o.MarshalJSON()
	return string(b), err
}

// MarshalJSON implements json.Marshaler.
func (o *Object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i := range o.fields {
		f := &o.fields[i]
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := appendJSON(&buf, f.key); err != nil {
			return nil, err
		}
		buf.WriteByte(':')
		if !f.parsed {
			buf.Write(f.raw)
			continue
		}
		if err := appendJSON(&buf, f.val); err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// String is the object's JSON text (or the error writing it).
func (o *Object) String() string {
	s, err := o.JSON()
	if err != nil {
		return fmt.Sprintf("<object: %v>", err)
	}
	return s
}

// APIVersion is the object's apiVersion ("" when unset).
func (o *Object) APIVersion() string { return o.GetString("apiVersion") }

// Kind is the object's kind ("" when unset).
func (o *Object) Kind() string { return o.GetString("kind") }

// Name is metadata.name ("" when unset).
func (o *Object) Name() string { return o.GetString("metadata.name") }

// Namespace is metadata.namespace ("" when unset or cluster-scoped).
func (o *Object) Namespace() string { return o.GetString("metadata.namespace") }

func (o *Object) metadata(create bool) map[string]any {
	f := o.field("metadata")
	if f == nil {
		if !create {
			return nil
		}
		o.fields = append(o.fields, objField{key: "metadata", val: map[string]any{}, parsed: true})
		f = &o.fields[len(o.fields)-1]
	}
	m, ok := f.value().(map[string]any)
	if !ok && create {
		m = map[string]any{}
		f.val = m
	}
	return m
}

func (o *Object) stringMap(name string) map[string]string {
	out := map[string]string{}
	md := o.metadata(false)
	m, _ := md[name].(map[string]any)
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func (o *Object) entry(name, key string) (string, bool) {
	md := o.metadata(false)
	m, _ := md[name].(map[string]any)
	s, ok := m[key].(string)
	return s, ok
}

func (o *Object) setEntry(name, key, value string) {
	md := o.metadata(true)
	m, ok := md[name].(map[string]any)
	if !ok {
		m = map[string]any{}
		md[name] = m
	}
	m[key] = value
}

func (o *Object) deleteEntry(name, key string) bool {
	md := o.metadata(false)
	m, _ := md[name].(map[string]any)
	_, ok := m[key]
	delete(m, key)
	return ok
}

// Labels is a copy of metadata.labels (empty when there are none).
func (o *Object) Labels() map[string]string { return o.stringMap("labels") }

// Label is one label's value and whether it is set.
func (o *Object) Label(key string) (string, bool) { return o.entry("labels", key) }

// SetLabel sets a label, creating metadata.labels if needed.
func (o *Object) SetLabel(key, value string) { o.setEntry("labels", key, value) }

// DeleteLabel removes a label and reports whether it was set.
func (o *Object) DeleteLabel(key string) bool { return o.deleteEntry("labels", key) }

// Annotations is a copy of metadata.annotations (empty when there are none).
func (o *Object) Annotations() map[string]string { return o.stringMap("annotations") }

// Annotation is one annotation's value and whether it is set.
func (o *Object) Annotation(key string) (string, bool) { return o.entry("annotations", key) }

// SetAnnotation sets an annotation, creating metadata.annotations if needed.
func (o *Object) SetAnnotation(key, value string) { o.setEntry("annotations", key, value) }

// DeleteAnnotation removes an annotation and reports whether it was set.
func (o *Object) DeleteAnnotation(key string) bool { return o.deleteEntry("annotations", key) }

// MergePatch applies an RFC 7386 JSON merge patch (a map, JSON text as a
// string, or anything that marshals to a JSON object).
func (o *Object) MergePatch(patch any) error {
	p, err := jsonValue(patch)
	if err != nil {
		return err
	}
	pm, ok := p.(map[string]any)
	if !ok {
		return fmt.Errorf("merge patch: a patch of an object must be a JSON object")
	}
	for _, k := range sortedKeys(pm) {
		pv := pm[k]
		f := o.field(k)
		if pv == nil {
			if f != nil {
				_, _ = o.Delete(Key(k))
			}
			continue
		}
		var cur any
		if f != nil {
			cur = f.value()
		}
		if err := o.Set(Key(k), MergePatch(cur, pv)); err != nil {
			return err
		}
	}
	return nil
}

// JSONPatch applies RFC 6902 operations (a []any of operation objects, or
// JSON text as a string), all or nothing.
func (o *Object) JSONPatch(ops any) error {
	m, err := o.Map()
	if err != nil {
		return err
	}
	out, err := JSONPatch(m, ops)
	if err != nil {
		return err
	}
	om, ok := out.(map[string]any)
	if !ok {
		return fmt.Errorf("json patch: the result is not an object")
	}
	return o.Replace(om)
}

// jsonValue is v as a JSON value: a string is JSON text, []byte and
// json.RawMessage too; anything else is normalized.
func jsonValue(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return parseJSON([]byte(x))
	case []byte:
		return parseJSON(x)
	case json.RawMessage:
		return parseJSON(x)
	}
	return normalize(v)
}
