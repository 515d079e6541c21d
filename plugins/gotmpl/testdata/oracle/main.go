// Command oracle renders the template cases in ../cases.json with Go's own
// text/template (or html/template) and sprig v3.3.0, the engines upstream
// uses, and prints the results as ../golden.json. The Rust test suite
// (tests/oracle.rs) checks syncweave-gotmpl against that file.
//
//	go run . < ../cases.json > ../golden.json
package main

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha3"
	"encoding/hex"
	"encoding/json"
	"fmt"
	htmltemplate "html/template"
	"os"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

type testCase struct {
	Name     string          `json:"name"`
	Template string          `json:"template"`
	Data     json.RawMessage `json:"data,omitempty"`
	HTML     bool            `json:"html,omitempty"`
}

type result struct {
	testCase
	Output *string `json:"output,omitempty"`
	Error  *string `json:"error,omitempty"`
}

// decodeData decodes like Kubernetes' unstructured JSON: integers become
// int64, other numbers float64.
func decodeData(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return convert(v), nil
}

func convert(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, e := range t {
			t[k] = convert(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = convert(e)
		}
		return t
	}
	return v
}

// funcs is sprig plus the hash helpers api-syncagent adds for naming.
func funcs() map[string]any {
	f := sprig.TxtFuncMap()
	f["sha3sum"] = func(s string) string {
		h := sha3.Sum256([]byte(s))
		return hex.EncodeToString(h[:])
	}
	f["sha3short"] = func(s string, lengths ...int) (string, error) {
		length := 20
		switch len(lengths) {
		case 0:
		case 1:
			length = lengths[0]
		default:
			return "", fmt.Errorf("sha3short: expected at most one length argument, got %d", len(lengths))
		}
		if length <= 0 {
			return "", fmt.Errorf("sha3short: invalid length %d", length)
		}
		h := sha3.Sum256([]byte(s))
		out := hex.EncodeToString(h[:])
		if length > len(out) {
			length = len(out)
		}
		return out[:length], nil
	}
	f["shortHash"] = func(s string) string {
		h := sha1.Sum([]byte(s))
		return hex.EncodeToString(h[:])[:20]
	}
	return f
}

func run(c testCase) (string, error) {
	data, err := decodeData(c.Data)
	if err != nil {
		return "", fmt.Errorf("bad case data: %w", err)
	}
	var buf bytes.Buffer
	if c.HTML {
		t, err := htmltemplate.New("template").Funcs(funcs()).Parse(c.Template)
		if err != nil {
			return "", err
		}
		err = t.Execute(&buf, data)
		return buf.String(), err
	}
	t, err := template.New("template").Funcs(funcs()).Parse(c.Template)
	if err != nil {
		return "", err
	}
	err = t.Execute(&buf, data)
	return buf.String(), err
}

func main() {
	var cases []testCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintln(os.Stderr, "reading cases:", err)
		os.Exit(1)
	}
	out := make([]result, 0, len(cases))
	for _, c := range cases {
		r := result{testCase: c}
		s, err := run(c)
		if err != nil {
			msg := err.Error()
			r.Error = &msg
		} else {
			r.Output = &s
		}
		out = append(out, r)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "writing golden:", err)
		os.Exit(1)
	}
	os.Stdout.Write([]byte(strings.TrimRight(buf.String(), "\n") + "\n"))
}
