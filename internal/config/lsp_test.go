package config

import (
	"strings"
	"testing"
)

func TestLSPServersAreValidated(t *testing.T) {
	c := Default()
	c.LSP.Servers = []LSPServer{
		{ID: "go", Command: "gopls", Extensions: map[string]string{".go": "go"}},
		{ID: "go", Command: "bin/x", Extensions: map[string]string{".go": "go", ".TS": "ts"}, Env: []string{"NOEQUALS"},
			Readiness: "soon", Settings: "[1]", RequestTimeout: "fast"},
		{ID: "", Extensions: nil, Readiness: "log", ReadinessPattern: "("},
	}
	err := c.Validate([]string{"native"})
	var got []string
	for _, e := range err.(Errors) {
		got = append(got, e.(*KeyError).Key)
	}
	want := []string{
		"lsp.servers[1].id", "lsp.servers[1].command", "lsp.servers[1].extensions", "lsp.servers[1].extensions",
		"lsp.servers[1].env", "lsp.servers[1].settings", "lsp.servers[1].readiness", "lsp.servers[1].request_timeout",
		"lsp.servers[2].id", "lsp.servers[2].command", "lsp.servers[2].extensions", "lsp.servers[2].readiness_pattern",
	}
	for _, w := range want {
		found := false
		for i, g := range got {
			if g == w {
				got = append(got[:i], got[i+1:]...)
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no problem reported for %s; got %v", w, err)
		}
	}
	if len(got) > 0 {
		t.Errorf("unexpected problems for %v", got)
	}
}

func TestLSPServerKeysAreChecked(t *testing.T) {
	raw := map[string]any{"lsp": map[string]any{"servers": []any{
		map[string]any{"id": "go", "command": "gopls", "extentions": map[string]any{}},
		"gopls",
	}}}
	var got []string
	for _, e := range CheckKeys(raw) {
		got = append(got, e.Error())
	}
	if len(got) != 2 || !strings.HasPrefix(got[0], "lsp.servers[0].extentions: is not a known setting") || !strings.HasPrefix(got[1], "lsp.servers[1]: is not a mapping") {
		t.Errorf("CheckKeys = %q", got)
	}
}
