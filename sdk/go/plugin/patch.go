package plugin

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// MergePatch applies an RFC 7386 JSON merge patch to target and returns the
// result (target's maps are edited in place). Both are JSON values.
func MergePatch(target, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	tm, ok := target.(map[string]any)
	if !ok {
		tm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(tm, k)
			continue
		}
		tm[k] = MergePatch(tm[k], v)
	}
	return tm
}

// JSONPatch applies RFC 6902 operations to a copy of doc and returns it;
// doc is unchanged when an operation fails (all or nothing). ops is a []any
// of operation objects, or JSON text as a string.
func JSONPatch(doc any, ops any) (any, error) {
	list, err := jsonValue(ops)
	if err != nil {
		return nil, fmt.Errorf("json patch: %w", err)
	}
	arr, ok := list.([]any)
	if !ok {
		return nil, fmt.Errorf("json patch: the operations must be a JSON array")
	}
	out, err := deepCopy(doc)
	if err != nil {
		return nil, err
	}
	for i, raw := range arr {
		op, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("json patch: operation %d is not an object", i)
		}
		name, _ := op["op"].(string)
		path, hasPath := op["path"].(string)
		if !hasPath {
			return nil, fmt.Errorf("json patch: operation %d (%s) has no path", i, name)
		}
		fail := func(err error) error { return fmt.Errorf("json patch: operation %d (%s %s): %w", i, name, path, err) }
		switch name {
		case "add", "replace", "test":
			value, ok := op["value"]
			if !ok {
				return nil, fail(fmt.Errorf("no value"))
			}
			value, err = deepCopy(value)
			if err != nil {
				return nil, fail(err)
			}
			switch name {
			case "add":
				out, err = pointerAdd(out, path, value)
			case "replace":
				if out, _, err = pointerRemove(out, path); err == nil {
					out, err = pointerAdd(out, path, value)
				}
			case "test":
				var got any
				if got, err = pointerGet(out, path); err == nil && !jsonEqual(got, value) {
					err = fmt.Errorf("the value there differs")
				}
			}
		case "remove":
			out, _, err = pointerRemove(out, path)
		case "move", "copy":
			from, ok := op["from"].(string)
			if !ok {
				return nil, fail(fmt.Errorf("no from"))
			}
			var v any
			if name == "move" {
				if strings.HasPrefix(path, from+"/") {
					return nil, fail(fmt.Errorf("cannot move a value into itself"))
				}
				out, v, err = pointerRemove(out, from)
			} else if v, err = pointerGet(out, from); err == nil {
				v, err = deepCopy(v)
			}
			if err == nil {
				out, err = pointerAdd(out, path, v)
			}
		default:
			return nil, fail(fmt.Errorf("unknown operation; use add, remove, replace, move, copy or test"))
		}
		if err != nil {
			return nil, fail(err)
		}
	}
	return out, nil
}

func deepCopy(v any) (any, error) {
	text, err := MarshalJSON(v)
	if err != nil {
		return nil, err
	}
	return parseJSON([]byte(text))
}

func jsonEqual(a, b any) bool {
	na, _ := deepCopy(a)
	nb, _ := deepCopy(b)
	return reflect.DeepEqual(numbersAsFloat(na), numbersAsFloat(nb))
}

func numbersAsFloat(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbersAsFloat(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbersAsFloat(e)
		}
	}
	return v
}

func pointerTokens(ptr string) ([]string, error) {
	if ptr == "" {
		return nil, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer (it must start with /)", ptr)
	}
	parts := strings.Split(ptr[1:], "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

func arrayIndex(tok string, n int, appendOK bool) (int, error) {
	if appendOK && tok == "-" {
		return n, nil
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 || (tok != "0" && strings.HasPrefix(tok, "0")) {
		return 0, fmt.Errorf("%q is not an array index", tok)
	}
	limit := n - 1
	if appendOK {
		limit = n
	}
	if i > limit {
		return 0, fmt.Errorf("index %d is out of range (length %d)", i, n)
	}
	return i, nil
}

func pointerGet(doc any, ptr string) (any, error) {
	toks, err := pointerTokens(ptr)
	if err != nil {
		return nil, err
	}
	cur := doc
	for _, t := range toks {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, fmt.Errorf("%q does not exist", ptr)
			}
			cur = v
		case []any:
			i, err := arrayIndex(t, len(c), false)
			if err != nil {
				return nil, err
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%q does not exist", ptr)
		}
	}
	return cur, nil
}

// pointerEdit applies edit to the container holding the last token and
// stores the container edit returns back into its parent.
func pointerEdit(doc any, ptr string, edit func(container any, last string) (any, error)) (any, error) {
	toks, err := pointerTokens(ptr)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return edit(nil, "")
	}
	var walk func(cur any, rest []string) (any, error)
	walk = func(cur any, rest []string) (any, error) {
		if len(rest) == 1 {
			return edit(cur, rest[0])
		}
		switch c := cur.(type) {
		case map[string]any:
			child, ok := c[rest[0]]
			if !ok {
				return nil, fmt.Errorf("%q does not exist", ptr)
			}
			nv, err := walk(child, rest[1:])
			if err != nil {
				return nil, err
			}
			c[rest[0]] = nv
			return c, nil
		case []any:
			i, err := arrayIndex(rest[0], len(c), false)
			if err != nil {
				return nil, err
			}
			nv, err := walk(c[i], rest[1:])
			if err != nil {
				return nil, err
			}
			c[i] = nv
			return c, nil
		}
		return nil, fmt.Errorf("%q does not exist", ptr)
	}
	return walk(doc, toks)
}

func pointerAdd(doc any, ptr string, value any) (any, error) {
	return pointerEdit(doc, ptr, func(container any, last string) (any, error) {
		if ptr == "" {
			return value, nil
		}
		switch c := container.(type) {
		case map[string]any:
			c[last] = value
			return c, nil
		case []any:
			i, err := arrayIndex(last, len(c), true)
			if err != nil {
				return nil, err
			}
			c = append(c, nil)
			copy(c[i+1:], c[i:])
			c[i] = value
			return c, nil
		}
		return nil, fmt.Errorf("the parent of %q is not an object or array", ptr)
	})
}

func pointerRemove(doc any, ptr string) (any, any, error) {
	var removed any
	out, err := pointerEdit(doc, ptr, func(container any, last string) (any, error) {
		if ptr == "" {
			return nil, fmt.Errorf("cannot remove the whole document")
		}
		switch c := container.(type) {
		case map[string]any:
			v, ok := c[last]
			if !ok {
				return nil, fmt.Errorf("%q does not exist", ptr)
			}
			removed = v
			delete(c, last)
			return c, nil
		case []any:
			i, err := arrayIndex(last, len(c), false)
			if err != nil {
				return nil, err
			}
			removed = c[i]
			return append(c[:i:i], c[i+1:]...), nil
		}
		return nil, fmt.Errorf("%q does not exist", ptr)
	})
	return out, removed, err
}

// GetPointer is the value at a JSON pointer (RFC 6901, "/metadata/name")
// in v, and whether there is one.
func GetPointer(v any, ptr string) (any, bool) {
	got, err := pointerGet(v, ptr)
	return got, err == nil
}
