package lsp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestFrameReader(t *testing.T) {
	big := strings.Repeat("h", MaxHeaderBytes)
	for _, tc := range []struct {
		name, in string
		want     []string // bodies; then the error
		err      error
	}{
		{"one", "Content-Length: 2\r\n\r\n{}", []string{"{}"}, io.EOF},
		{"case", "content-LENGTH:3\r\n\r\n[1]", []string{"[1]"}, io.EOF},
		{"other headers", "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}", []string{"{}"}, io.EOF},
		{"two", "Content-Length: 1\r\n\r\n1Content-Length: 1\r\n\r\n2", []string{"1", "2"}, io.EOF},
		{"bare newlines", "Content-Length: 1\n\n1", []string{"1"}, io.EOF},
		{"missing length", "Content-Type: x\r\n\r\n{}", nil, errFraming},
		{"twice", "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", nil, errFraming},
		{"negative", "Content-Length: -1\r\n\r\n", nil, errFraming},
		{"not a number", "Content-Length: 1e3\r\n\r\n", nil, errFraming},
		{"no colon", "Content-Length 2\r\n\r\n{}", nil, errFraming},
		{"header over the limit", "X: " + big + "\r\nContent-Length: 2\r\n\r\n{}", nil, errFraming},
		{"header block over the limit", strings.Repeat("X: "+strings.Repeat("h", 1000)+"\r\n", 70) + "Content-Length: 2\r\n\r\n{}", nil, errFraming},
		{"body over the limit", "Content-Length: 101\r\n\r\n" + strings.Repeat("b", 101), nil, errFraming},
		{"body at the limit", "Content-Length: 100\r\n\r\n" + strings.Repeat("b", 100), []string{strings.Repeat("b", 100)}, io.EOF},
		{"short body", "Content-Length: 5\r\n\r\n{}", nil, errFraming},
		{"cut header", "Content-Len", nil, errFraming},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := newFrameReader(strings.NewReader(tc.in), 100)
			var got []string
			var err error
			for {
				var b []byte
				if b, err = fr.read(); err != nil {
					break
				}
				got = append(got, string(b))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || !errors.Is(err, tc.err) {
				t.Errorf("read(%.40q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

func FuzzFrameReader(f *testing.F) {
	f.Add([]byte("Content-Length: 2\r\n\r\n{}"))
	f.Add([]byte("content-length:0\n\n"))
	f.Add([]byte("Content-Length: 99999999999999999999\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		fr := newFrameReader(bytes.NewReader(in), 1000)
		for range 100 {
			b, err := fr.read()
			if err != nil {
				return
			}
			if len(b) > 1000 {
				t.Fatalf("body of %d bytes over the limit", len(b))
			}
		}
	})
}

func TestWriteFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	body := `{"a":"é😀"}`
	writeFrame(&buf, []byte(body))
	if !strings.HasPrefix(buf.String(), "Content-Length: 14\r\n\r\n") {
		t.Errorf("frame = %q, want a byte length of 14", buf.String())
	}
	got, err := newFrameReader(&buf, 0).read()
	if err != nil || string(got) != body {
		t.Errorf("round trip = %q, %v", got, err)
	}
}

func TestColumns(t *testing.T) {
	line := "aé😀b"
	for _, tc := range []struct{ points, units int }{{0, 0}, {1, 1}, {2, 2}, {3, 4}, {4, 5}} {
		u, ok := utf16Col(line, tc.points)
		if !ok || u != tc.units {
			t.Errorf("utf16Col(%q, %d) = %d, %v; want %d", line, tc.points, u, ok, tc.units)
		}
		if p := pointCol(line, tc.units); p != tc.points {
			t.Errorf("pointCol(%q, %d) = %d, want %d", line, tc.units, p, tc.points)
		}
	}
	if _, ok := utf16Col(line, 5); ok {
		t.Errorf("utf16Col past the end reported on the line")
	}
	// Inside a surrogate pair: the whole character.
	if p := pointCol(line, 3); p != 3 {
		t.Errorf("pointCol inside a pair = %d, want 3", p)
	}
	if got := lines("a\nb\r\nc\rd"); strings.Join(got, "|") != "a|b|c|d" {
		t.Errorf("lines = %q", got)
	}
}

func TestRoute(t *testing.T) {
	for in, want := range map[string]string{
		"a.go": ".go", "dir/x.D.TS": ".ts", `c:\w\m.Py`: ".py", "foo.d.ts": ".ts",
		".bashrc": "", "Makefile": "", "dir.go/file": "", "x.": "", "a/.eslintrc.json": ".json",
	} {
		if got := Route(in); got != want {
			t.Errorf("Route(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRegistrationIsAllOrNothing(t *testing.T) {
	good := ServerConfig{ID: "a", Command: "a", Extensions: map[string]string{".a": "a"}}
	for _, tc := range []struct {
		name    string
		servers []ServerConfig
		want    Code
	}{
		{"conflict", []ServerConfig{good, {ID: "b", Command: "b", Extensions: map[string]string{".b": "b", ".a": "a"}}}, CodeConflict},
		{"duplicate id", []ServerConfig{good, {ID: "a", Command: "b", Extensions: map[string]string{".b": "b"}}}, CodeInvalidProvider},
		{"bad extension", []ServerConfig{good, {ID: "b", Command: "b", Extensions: map[string]string{".d.ts": "t"}}}, CodeInvalidProvider},
		{"upper extension", []ServerConfig{{ID: "b", Command: "b", Extensions: map[string]string{".TS": "t"}}}, CodeInvalidProvider},
		{"no dot", []ServerConfig{{ID: "b", Command: "b", Extensions: map[string]string{"ts": "t"}}}, CodeInvalidProvider},
		{"relative command", []ServerConfig{{ID: "b", Command: "bin/b", Extensions: map[string]string{".b": "b"}}}, CodeInvalidProvider},
		{"bad id", []ServerConfig{{ID: "a b", Command: "b", Extensions: map[string]string{".b": "b"}}}, CodeInvalidProvider},
		{"bad pattern", []ServerConfig{{ID: "b", Command: "b", Extensions: map[string]string{".b": "b"}, Readiness: Readiness{Kind: ReadyLog, Pattern: "("}}}, CodeInvalidProvider},
	} {
		r, err := routes(tc.servers)
		if CodeOf(err) != tc.want || r != nil {
			t.Errorf("%s: routes = %v, %v; want no routes and %v", tc.name, r, err, tc.want)
		}
	}
	if _, err := routes(Presets()); err != nil {
		t.Errorf("the presets do not register: %v", err)
	}
}

func TestMergeDisplacesPresets(t *testing.T) {
	got := Merge(Presets(), []ServerConfig{
		{ID: "mygo", Command: "gopls", Extensions: map[string]string{".go": "go"}},
		{ID: "pyright", Command: "/opt/pyright", Extensions: map[string]string{".py": "python"}},
	})
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	if want := "typescript clangd rust-analyzer mygo pyright"; strings.Join(ids, " ") != want {
		t.Errorf("Merge ids = %v, want %s", ids, want)
	}
}

func TestRenderCaps(t *testing.T) {
	r := &Result{Kind: KindLocations}
	for i := range 120 {
		r.Locations = append(r.Locations, Location{Rel: []string{"a.go", "b.go"}[i%2], Line: i + 1, Column: 1})
	}
	out := Render(r, nil)
	lines := strings.Split(out, "\n")
	if len(lines) != 101 || lines[0] != "a.go:1:1" || lines[50] != "b.go:2:1" || lines[100] != "… 20 more location(s) omitted (limit 100)." {
		t.Errorf("Render = %d lines: %q … %q", len(lines), lines[0], lines[len(lines)-1])
	}
	if got := Render(&Result{Kind: KindLocations}, nil); got != "No results." {
		t.Errorf("Render(none) = %q", got)
	}
	h := Render(&Result{Kind: KindHover, HasHover: true, Hover: strings.Repeat("😀", 20)}, &RenderOptions{MaxResultChars: 16})
	if !strings.HasPrefix(h, "😀😀") || !strings.HasSuffix(h, "… (truncated)") || len([]rune(h)) > 16 {
		t.Errorf("Render cut = %q, want at most 16 whole characters", h)
	}
}

func FuzzResults(f *testing.F) {
	f.Add([]byte(`[{"uri":"file:///a","range":{"start":{"line":1,"character":2},"end":{"line":1,"character":3}}}]`))
	f.Add([]byte(`{"targetUri":"file:///a","targetSelectionRange":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}}`))
	f.Add([]byte(`{"contents":[{"language":"go","value":"x"},"y"]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		locs, err := parseLocations("textDocument/definition", raw)
		if err == nil {
			for _, l := range locs {
				if l.line < 0 || l.col < 0 || l.eLine < 0 || l.eCol < 0 || l.uri == "" {
					t.Fatalf("accepted %+v from %s", l, raw)
				}
			}
		} else if CodeOf(err) != CodeMalformedResponse {
			t.Fatalf("parseLocations error %v is not LSP_MALFORMED_RESPONSE", err)
		}
		if _, err := parseHover(raw); err != nil && CodeOf(err) != CodeMalformedResponse {
			t.Fatalf("parseHover error %v is not LSP_MALFORMED_RESPONSE", err)
		}
	})
}
