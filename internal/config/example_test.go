package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestEveryKeyIsDocumented(t *testing.T) {
	for _, k := range Keys() {
		if keyDoc(k) == "" {
			t.Errorf("key %s has no description in keyDocs", k)
		}
	}
	for k := range keyDocs {
		if !slices.Contains(Keys(), k) {
			t.Errorf("keyDocs describes %s, which is no key", k)
		}
	}
}

// The example sets every key but the host-dependent ones, parses back
// with no unknown key, and is the default configuration.
func TestExampleParsesBackToTheDefaults(t *testing.T) {
	ex := Example()
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(ex), &raw); err != nil {
		t.Fatalf("example is not YAML: %v\n%s", err, ex)
	}
	if errs := CheckKeys(raw); len(errs) > 0 {
		t.Fatalf("example has unknown keys: %v", errs)
	}
	for _, k := range Keys() {
		set := strings.Contains(ex, "\n"+strings.Repeat("  ", strings.Count(k, "."))+k[strings.LastIndexByte(k, '.')+1:]+":")
		if set == hostDependent[k] {
			t.Errorf("key %s: set in the example = %v, want %v", k, set, !hostDependent[k])
		}
		if !strings.Contains(ex, EnvName(k)) {
			t.Errorf("example does not name %s", EnvName(k))
		}
	}
}

// docs/config.example.yaml is Example(); regenerate it with
// go run ./cmd/dsh config init --force docs/config.example.yaml
func TestDocsExampleIsGenerated(t *testing.T) {
	got, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != Example() {
		t.Error("docs/config.example.yaml differs from config.Example(); regenerate it: go run ./cmd/dsh config init --force docs/config.example.yaml")
	}
}

func TestUnknownEnv(t *testing.T) {
	got := UnknownEnv([]string{
		"DSH_SANDBOX_DRIVER=docker", "DSH_SANBOX_DRIVER=docker", "DSH_CONFIG=x",
		"DSH_NATIVE_TRACE=1", "DSH_INIT_LOG=debug", "DSH_REQUIRE_ROOT=1", "PATH=/bin", "DSH_ZZZZZZZZZZZZZZZZZZZZ=1",
	})
	want := []string{
		"DSH_SANBOX_DRIVER is not a dsh setting and is ignored; did you mean DSH_SANDBOX_DRIVER (sandbox.driver)?",
		"DSH_ZZZZZZZZZZZZZZZZZZZZ is not a dsh setting and is ignored",
	}
	if !slices.Equal(got, want) {
		t.Errorf("UnknownEnv = %q, want %q", got, want)
	}
}

func TestParsePolicyReportsEveryProblem(t *testing.T) {
	_, err := ParsePolicy([]byte("defualt: deny\nports: [80, 70000, web]\nallow: [example.org:443, 10.0.0.1/8]\ndeny: [1]\n"))
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("ParsePolicy = %v, want Errors", err)
	}
	want := []string{"defualt", "default", "ports[2]", "deny[0]", "allow[1]", "ports[1]"}
	var keys []string
	for _, e := range es {
		var ke *KeyError
		if errors.As(e, &ke) {
			keys = append(keys, ke.Key)
		}
	}
	if !slices.Equal(keys, want) {
		t.Errorf("problems at %q, want %q:\n%v", keys, want, err)
	}
	if !strings.Contains(err.Error(), `did you mean "default"?`) {
		t.Errorf("no suggestion for defualt: %v", err)
	}
	for _, good := range []string{"default: deny\n", "default: public\nports: [443]\nallow: ['*.example.org:443']\ndeny: [10.0.0.0/8]\n"} {
		if _, err := ParsePolicy([]byte(good)); err != nil {
			t.Errorf("ParsePolicy(%q) = %v", good, err)
		}
	}
	for _, bad := range []string{"", "default: deny\n---\ndefault: deny\n", "[a]\n", "default: [\n"} {
		if _, err := ParsePolicy([]byte(bad)); err == nil {
			t.Errorf("ParsePolicy(%q) = nil, want an error", bad)
		}
	}
}
