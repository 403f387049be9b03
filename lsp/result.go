package lsp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// wireLocation is a location as the server gave it: a URI and a range in
// 0-based UTF-16 positions.
type wireLocation struct {
	uri                    string
	line, col, eLine, eCol int
}

// parseLocations normalises a definition, references or implementation
// result: null is none; a Location, an array of Locations or an array of
// LocationLinks (their targetUri and targetSelectionRange) is accepted,
// and anything else — a position that is negative or not an integer, a
// missing uri — is CodeMalformedResponse.
func parseLocations(method string, raw json.RawMessage) ([]wireLocation, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if raw[0] == '[' {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, malformed(method, "the result is not an array of locations: %v", err)
		}
	} else {
		items = []json.RawMessage{raw}
	}
	out := make([]wireLocation, 0, len(items))
	for i, it := range items {
		loc, err := parseLocation(it)
		if err != nil {
			return nil, malformed(method, "location %d: %v", i, err)
		}
		out = append(out, loc)
	}
	return dedupe(out), nil
}

func malformed(method, format string, args ...any) error {
	return errorf(CodeMalformedResponse, nil, "the server's answer to %s is malformed: %s", method, fmt.Sprintf(format, args...))
}

type rawRange struct {
	Start, End *rawPosition
}

type rawPosition struct {
	Line      json.Number `json:"line"`
	Character json.Number `json:"character"`
}

func parseLocation(raw json.RawMessage) (wireLocation, error) {
	var v struct {
		URI                  *string   `json:"uri"`
		Range                *rawRange `json:"range"`
		TargetURI            *string   `json:"targetUri"`
		TargetSelectionRange *rawRange `json:"targetSelectionRange"`
		TargetRange          *rawRange `json:"targetRange"`
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return wireLocation{}, fmt.Errorf("not a Location or LocationLink: %v", err)
	}
	uri, rng := v.URI, v.Range
	if v.TargetURI != nil {
		uri, rng = v.TargetURI, v.TargetSelectionRange
		if rng == nil {
			rng = v.TargetRange
		}
	}
	if uri == nil || *uri == "" {
		return wireLocation{}, fmt.Errorf("no uri")
	}
	if rng == nil || rng.Start == nil || rng.End == nil {
		return wireLocation{}, fmt.Errorf("no range")
	}
	var loc wireLocation
	loc.uri = *uri
	for _, f := range []struct {
		dst *int
		n   json.Number
		nm  string
	}{
		{&loc.line, rng.Start.Line, "start line"},
		{&loc.col, rng.Start.Character, "start character"},
		{&loc.eLine, rng.End.Line, "end line"},
		{&loc.eCol, rng.End.Character, "end character"},
	} {
		n, err := nonNegativeInt(f.n)
		if err != nil {
			return wireLocation{}, fmt.Errorf("%s: %v", f.nm, err)
		}
		*f.dst = n
	}
	return loc, nil
}

func nonNegativeInt(n json.Number) (int, error) {
	if n == "" {
		return 0, fmt.Errorf("missing")
	}
	i, err := n.Int64()
	if err != nil {
		return 0, fmt.Errorf("%s is not an integer", n)
	}
	if i < 0 || i > math.MaxInt32 {
		return 0, fmt.Errorf("%d is out of range", i)
	}
	return int(i), nil
}

func dedupe(locs []wireLocation) []wireLocation {
	seen := map[wireLocation]bool{}
	out := locs[:0]
	for _, l := range locs {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// parseHover renders a hover result as text: MarkupContent's value, a
// string as it is, a MarkedString {language, value} fenced as code, an
// array of these joined with a blank line. Null or empty content is ""
// (no hover information).
func parseHover(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var h struct {
		Contents json.RawMessage `json:"contents"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return "", malformed("textDocument/hover", "the result is not a Hover: %v", err)
	}
	s, err := hoverContents(h.Contents)
	if err != nil {
		return "", malformed("textDocument/hover", "%v", err)
	}
	return strings.TrimSpace(s), nil
}

func hoverContents(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case '[':
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return "", err
		}
		var parts []string
		for _, it := range items {
			s, err := hoverContents(it)
			if err != nil {
				return "", err
			}
			if s = strings.TrimSpace(s); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n\n"), nil
	case '{':
		var v struct {
			Kind     *string `json:"kind"`
			Language *string `json:"language"`
			Value    *string `json:"value"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", err
		}
		if v.Value == nil {
			return "", fmt.Errorf("hover contents without a value")
		}
		if v.Language != nil && v.Kind == nil {
			return "```" + *v.Language + "\n" + *v.Value + "\n```", nil
		}
		return *v.Value, nil
	}
	return "", fmt.Errorf("hover contents %s are neither markup, a string nor an array", trimForError(raw))
}
