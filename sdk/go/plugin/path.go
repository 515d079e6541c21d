package plugin

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Paths read and write JSON values (map[string]any, []any and scalars)
// with the syntax of the other SDKs' paths (gjson reads, sjson writes: what
// upstream PublishedResource mutations use):
//
//   - Keys are separated by '.': metadata.labels.app.
//   - A number selects an array element: spec.containers.0.image. On an
//     object a number is an ordinary key.
//   - '\' escapes the next character: metadata.annotations.example\.com/owner
//     ([Key] escapes a key for you).
//   - A leading ':' forces a segment to be an object key even if it is
//     numeric.
//   - Reads only: '*' and '?' match any run of characters / one character
//     in a key (the first matching key in sorted order wins: Go maps have
//     no order), and '#' is an array's length or, followed by more path,
//     maps the rest of the path over every element (spec.items.#.name).
//   - Writes only: -1 appends to an array (for deletes: removes the last
//     element). Writing to a missing path creates it: numeric segments
//     create arrays (padded with null), others objects; a scalar in the way
//     is replaced.
//
// gjson's queries (#(...)), modifiers (@) and multipaths are not supported.

// PathError says why a path cannot be used to write (or why a write failed).
type PathError struct {
	Path    string
	Problem string
}

func (e *PathError) Error() string { return e.Problem }

type globTok struct {
	kind byte // 'l' literal, '*' any run, '?' any one
	r    rune
}

type segment struct {
	key      string
	forceKey bool
	pattern  bool
	hash     bool
	glob     []globTok
}

func (s *segment) index() (int, bool) {
	if s.forceKey || s.pattern || s.hash || s.key == "" {
		return 0, false
	}
	for _, c := range s.key {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s.key)
	if err != nil {
		return 0, false
	}
	return n, true
}

func (s *segment) isAppend() bool { return !s.forceKey && s.key == "-1" }

func (s *segment) matches(candidate string) bool {
	if !s.pattern {
		return candidate == s.key
	}
	return globMatch(s.glob, []rune(candidate))
}

func globMatch(p []globTok, s []rune) bool {
	for len(p) > 0 {
		switch p[0].kind {
		case '*':
			for i := 0; i <= len(s); i++ {
				if globMatch(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
		default:
			if len(s) == 0 || s[0] != p[0].r {
				return false
			}
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}

// Key escapes one object key for use as a path segment:
// Key("example.com/x") is `example\.com/x`.
func Key(k string) string {
	var b strings.Builder
	for i, c := range k {
		if strings.ContainsRune(`\.*?#`, c) || (c == ':' && i == 0) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func parsePath(path string) []segment {
	var raws []string
	var cur strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c == '\\' && i+1 < len(path) {
			cur.WriteByte(c)
			cur.WriteByte(path[i+1])
			i++
			continue
		}
		if c == '.' {
			raws = append(raws, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	raws = append(raws, cur.String())
	segs := make([]segment, 0, len(raws))
	for _, raw := range raws {
		force := strings.HasPrefix(raw, ":")
		body := []rune(raw)
		if force {
			body = body[1:]
		}
		var text []rune
		var glob []globTok
		pattern, escaped := false, false
		for j := 0; j < len(body); j++ {
			c := body[j]
			if c == '\\' && j+1 < len(body) {
				text = append(text, body[j+1])
				glob = append(glob, globTok{kind: 'l', r: body[j+1]})
				escaped = true
				j++
				continue
			}
			if c == '*' || c == '?' {
				pattern = true
				glob = append(glob, globTok{kind: byte(c)})
			} else {
				glob = append(glob, globTok{kind: 'l', r: c})
			}
			text = append(text, c)
		}
		key := string(text)
		segs = append(segs, segment{
			key:      key,
			forceKey: force,
			pattern:  pattern,
			hash:     key == "#" && !escaped && !force,
			glob:     glob,
		})
	}
	return segs
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func getIn(v any, segs []segment) (any, bool) {
	cur := v
	for n := range segs {
		seg := &segs[n]
		if seg.hash {
			arr, ok := cur.([]any)
			if !ok {
				return nil, false
			}
			rest := segs[n+1:]
			if len(rest) == 0 {
				return len(arr), true
			}
			out := []any{}
			for _, item := range arr {
				if got, ok := getIn(item, rest); ok {
					out = append(out, got)
				}
			}
			return out, true
		}
		switch c := cur.(type) {
		case map[string]any:
			if seg.pattern {
				found := false
				for _, k := range sortedKeys(c) {
					if seg.matches(k) {
						cur, found = c[k], true
						break
					}
				}
				if !found {
					return nil, false
				}
			} else {
				next, ok := c[seg.key]
				if !ok {
					return nil, false
				}
				cur = next
			}
		case []any:
			idx, ok := seg.index()
			if !ok || idx >= len(c) {
				return nil, false
			}
			cur = c[idx]
		default:
			return nil, false
		}
	}
	return cur, true
}

// GetPath is the value at path in v and whether something is there (a
// null counts). The value is the one inside v, not a copy: editing a
// returned map edits v.
func GetPath(v any, path string) (any, bool) { return getIn(v, parsePath(path)) }

// GetPathString is the value at path coerced to a string like gjson's
// String(): strings as they are, null and missing as "", booleans as
// true/false, numbers in JSON form, objects and arrays as compact JSON.
func GetPathString(v any, path string) string {
	got, ok := GetPath(v, path)
	if !ok {
		return ""
	}
	return stringOf(got)
}

func stringOf(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.FormatInt(int64(x), 10)
		}
	}
	s, err := MarshalJSON(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return s
}

func checkWritable(path string, segs []segment) error {
	if path == "" {
		return &PathError{path, `the path is empty; name the field to write, e.g. "spec.replicas"`}
	}
	for _, seg := range segs {
		if seg.pattern {
			return &PathError{path, fmt.Sprintf(`path %q contains a wildcard (* or ?), which can only be used to read; escape it as \* or \? if it is part of a key`, path)}
		}
		if seg.hash {
			return &PathError{path, fmt.Sprintf(`path %q contains '#', which can only be used to read; escape it as \# if it is part of a key`, path)}
		}
	}
	return nil
}

func containerFor(seg *segment) any {
	if _, ok := seg.index(); ok || seg.isAppend() {
		return []any{}
	}
	return map[string]any{}
}

func isContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

func setIn(cur any, segs []segment, i int, path string, value any) (any, error) {
	seg := &segs[i]
	last := i == len(segs)-1
	child := func(existing any) (any, error) {
		if last {
			return value, nil
		}
		if !isContainer(existing) {
			existing = containerFor(&segs[i+1])
		}
		return setIn(existing, segs, i+1, path, value)
	}
	switch c := cur.(type) {
	case []any:
		if seg.isAppend() {
			v, err := child(nil)
			if err != nil {
				return nil, err
			}
			return append(c, v), nil
		}
		idx, ok := seg.index()
		if !ok {
			return nil, &PathError{path, fmt.Sprintf("path %q: cannot use key %q on an array; use a numeric index or -1 to append", path, seg.key)}
		}
		for len(c) <= idx {
			c = append(c, nil)
		}
		v, err := child(c[idx])
		if err != nil {
			return nil, err
		}
		c[idx] = v
		return c, nil
	case map[string]any:
		v, err := child(c[seg.key])
		if err != nil {
			return nil, err
		}
		c[seg.key] = v
		return c, nil
	}
	return nil, &PathError{path, fmt.Sprintf("path %q: the value to write into is not an object or array", path)}
}

// SetPath writes value at path in v (a map[string]any or []any), creating
// what is missing, and returns v (a new slice when v is an array that
// grew). Values of other types than the JSON ones (map[string]string,
// structs, ...) are stored as their JSON form.
func SetPath(v any, path string, value any) (any, error) {
	segs := parsePath(path)
	if err := checkWritable(path, segs); err != nil {
		return v, err
	}
	norm, err := normalize(value)
	if err != nil {
		return v, &PathError{path, fmt.Sprintf("path %q: the value cannot be written as JSON: %v", path, err)}
	}
	return setIn(v, segs, 0, path, norm)
}

func deleteIn(cur any, segs []segment, i int) (any, any, bool) {
	seg := &segs[i]
	last := i == len(segs)-1
	switch c := cur.(type) {
	case map[string]any:
		if last {
			old, ok := c[seg.key]
			delete(c, seg.key)
			return c, old, ok
		}
		next, ok := c[seg.key]
		if !ok {
			return c, nil, false
		}
		nv, old, ok := deleteIn(next, segs, i+1)
		c[seg.key] = nv
		return c, old, ok
	case []any:
		if last && seg.isAppend() {
			if len(c) == 0 {
				return c, nil, false
			}
			return c[:len(c)-1], c[len(c)-1], true
		}
		idx, ok := seg.index()
		if !ok || idx >= len(c) {
			return c, nil, false
		}
		if last {
			old := c[idx]
			return append(c[:idx:idx], c[idx+1:]...), old, true
		}
		nv, old, ok := deleteIn(c[idx], segs, i+1)
		c[idx] = nv
		return c, old, ok
	}
	return cur, nil, false
}

// DeletePath removes what path names from v; it returns v (a new slice
// when v is an array that shrank), the removed value and whether there was
// one.
func DeletePath(v any, path string) (any, any, bool, error) {
	segs := parsePath(path)
	if err := checkWritable(path, segs); err != nil {
		return v, nil, false, err
	}
	nv, old, ok := deleteIn(v, segs, 0)
	return nv, old, ok, nil
}

// normalize turns a value into the types the SDK's JSON values are made of
// (map[string]any, []any, string, bool, nil, numbers), so that paths can
// walk into what a plugin stored.
func normalize(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool, json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return v, nil
	case map[string]any:
		for k, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
		return x, nil
	case []any:
		for i, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
		return x, nil
	case map[string]string:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = e
		}
		return m, nil
	case []string:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = e
		}
		return a, nil
	case *Object:
		return x.Map()
	}
	text, err := MarshalJSON(v)
	if err != nil {
		return nil, err
	}
	return parseJSON([]byte(text))
}
