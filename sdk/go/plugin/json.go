package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// parseJSON decodes one JSON value: objects as map[string]any, arrays as
// []any, numbers as json.Number (so that they are written back exactly).
func parseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

// ParseJSON decodes JSON text the way the SDK does: objects as
// map[string]any, arrays as []any, numbers as json.Number.
func ParseJSON(text string) (any, error) { return parseJSON([]byte(text)) }

// appendJSON appends v as compact JSON, without escaping <, > and & (a
// Kubernetes object's strings are written as they are).
func appendJSON(buf *bytes.Buffer, v any) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	buf.Truncate(buf.Len() - 1) // Encode's newline
	return nil
}

// MarshalJSON writes v as compact JSON text without HTML escaping, as the
// SDK writes outputs.
func MarshalJSON(v any) (string, error) {
	var buf bytes.Buffer
	if err := appendJSON(&buf, v); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// DecodeConfig decodes a config (JSON text) into C strictly, the default
// of every role's ParseConfig: "" and "null" give C's zero value, unknown
// fields are refused, and errors are invalid-config naming the field
// ("config.labels: expected string, got number"). When C (or *C) has a
// method Validate() error, it runs next; its error is returned as is when
// it is an *Error, else as invalid-config.
func DecodeConfig[C any](text string) (C, error) {
	var cfg C
	trimmed := strings.TrimSpace(text)
	if trimmed != "" && trimmed != "null" {
		dec := json.NewDecoder(strings.NewReader(trimmed))
		dec.DisallowUnknownFields()
		dec.UseNumber()
		if err := dec.Decode(&cfg); err != nil {
			return cfg, configError(err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return cfg, Errorf(InvalidConfig, "config: unexpected data after the JSON value")
		}
	}
	var check any = &cfg
	if v, ok := check.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			var pe *Error
			if errors.As(err, &pe) {
				return cfg, err
			}
			return cfg, &Error{Kind: InvalidConfig, Message: err.Error(), Err: err}
		}
	}
	return cfg, nil
}

func configError(err error) *Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		at := "config"
		if te.Field != "" {
			at += "." + te.Field
		}
		return &Error{Kind: InvalidConfig, Message: fmt.Sprintf("%s: expected %s, got %s", at, goTypeName(te.Type.String()), te.Value), Err: err}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{Kind: InvalidConfig, Message: "config: not valid JSON: " + err.Error(), Err: err}
	}
	return &Error{Kind: InvalidConfig, Message: "config: " + strings.TrimPrefix(err.Error(), "json: "), Err: err}
}

// goTypeName says what a JSON value of Go type t looks like.
func goTypeName(t string) string {
	switch {
	case t == "string":
		return "string"
	case t == "bool":
		return "boolean"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "integer"
	case strings.HasPrefix(t, "float"), t == "json.Number":
		return "number"
	case strings.HasPrefix(t, "[]"), strings.HasPrefix(t, "["):
		return "array"
	case strings.HasPrefix(t, "map["), strings.HasPrefix(t, "struct"), strings.Contains(t, "."):
		return "object"
	}
	return t
}
