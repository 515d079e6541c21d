// Command oracle decodes the rendered texts in ../documents.json exactly as
// upstream init-agent does (internal/manifest/yaml.go: apimachinery's
// YAMLOrJSONDecoder into map[string]any, empty documents skipped) and
// prints ../documents.golden.json, which the renderer's tests compare with.
//
//	go run . < ../documents.json > ../documents.golden.json
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	yamlutil "k8s.io/apimachinery/pkg/util/yaml"
)

type testCase struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

type result struct {
	testCase
	Objects []map[string]any `json:"objects,omitempty"`
	Error   *string          `json:"error,omitempty"`
}

func parse(data []byte) ([]map[string]any, error) {
	var out []map[string]any
	dec := yamlutil.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("failed to decode YAML: %w", err)
		}
		if len(obj) == 0 {
			continue
		}
		out = append(out, obj)
	}
	return out, nil
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
		objs, err := parse([]byte(c.Text))
		if err != nil {
			msg := err.Error()
			r.Error = &msg
		} else {
			r.Objects = objs
			if r.Objects == nil {
				r.Objects = []map[string]any{}
			}
		}
		out = append(out, r)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "writing golden:", err)
		os.Exit(1)
	}
}
