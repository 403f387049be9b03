package bridge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cacheVersion is the format of a cached catalog file.
const cacheVersion = 1

// cachedCatalog is a server's last good catalog on disk: what the bridge
// offers before the server is up (a lazy one, or one still starting),
// since a widely used client never re-reads tools/list after
// list_changed.
type cachedCatalog struct {
	Version   int             `json:"version"`
	Server    string          `json:"server"`
	Tools     []*mcp.Tool     `json:"tools"`
	Resources []*mcp.Resource `json:"resources,omitempty"`
	Prompts   []*mcp.Prompt   `json:"prompts,omitempty"`
}

// cachePath is the file of server name's catalog under key (the
// server's configuration: a changed one starts afresh).
func cachePath(dir, name, key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(dir, name+"-"+hex.EncodeToString(sum[:8])+".json")
}

func loadCatalog(path string) (*cachedCatalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c cachedCatalog
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("cached catalog %s: %w", path, err)
	}
	if c.Version != cacheVersion {
		return nil, fmt.Errorf("cached catalog %s: version %d, want %d", path, c.Version, cacheVersion)
	}
	return &c, nil
}

// storeCatalog writes c atomically, readable by its owner only.
func storeCatalog(path string, c *cachedCatalog) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".catalog-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// drift describes how the live tools differ from the cached ones, one
// line per tool, sorted.
func drift(cached, live []*mcp.Tool) []string {
	byName := func(ts []*mcp.Tool) map[string]*mcp.Tool {
		m := map[string]*mcp.Tool{}
		for _, t := range ts {
			m[t.Name] = t
		}
		return m
	}
	c, l := byName(cached), byName(live)
	var out []string
	for name, lt := range l {
		ct, ok := c[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("tool %q is new", name))
		case !sameJSON(ct.InputSchema, lt.InputSchema):
			out = append(out, fmt.Sprintf("tool %q has a new input schema", name))
		case !sameJSON(ct.OutputSchema, lt.OutputSchema):
			out = append(out, fmt.Sprintf("tool %q has a new output schema", name))
		case ct.Description != lt.Description:
			out = append(out, fmt.Sprintf("tool %q has a new description", name))
		}
	}
	for name := range c {
		if _, ok := l[name]; !ok {
			out = append(out, fmt.Sprintf("tool %q is gone", name))
		}
	}
	sort.Strings(out)
	return out
}

// sameJSON compares two schemas as JSON values (a cached one is decoded
// from the file, a live one from the wire).
func sameJSON(a, b any) bool {
	norm := func(v any) any {
		data, _ := json.Marshal(v)
		var out any
		json.Unmarshal(data, &out)
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
