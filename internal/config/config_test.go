package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if err := c.Validate(testDrivers); err != nil {
		t.Fatalf("Default().Validate() = %v, want nil", err)
	}
}

func TestValidateReportsEveryProblemWithItsKey(t *testing.T) {
	c := Default()
	c.Sandbox.Limits.Memory = "12XB"
	c.Sandbox.Driver = "vm"
	c.Network.Ports = []int{80, 70000}
	c.Web.Fetch.Timeout = "soon"
	c.Web.Policy.Allow = []string{"example.org:443", "10.0.0.1/8"}
	err := c.Validate(testDrivers)
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("Validate() = %v, want Errors", err)
	}
	want := []string{"sandbox.driver", "sandbox.limits.memory", "network.ports[1]", "web.policy.allow[1]", "web.fetch.timeout"}
	if len(es) != len(want) {
		t.Fatalf("Validate() found %d problems, want %d:\n%v", len(es), len(want), err)
	}
	for i, w := range want {
		var ke *KeyError
		if !errors.As(es[i], &ke) || ke.Key != w {
			t.Errorf("problem %d = %v, want key %s", i, es[i], w)
		}
	}
}

// Internationalised names are valid entries (taken as net/http dials
// them); a name IDNA rejects is a problem at its key.
func TestValidateInternationalisedEntries(t *testing.T) {
	c := Default()
	c.Network.Allow = []string{"bücher.example:443", "*.straße.example"}
	if err := c.Validate(testDrivers); err != nil {
		t.Errorf("Validate() with internationalised allow entries = %v, want nil", err)
	}
	c.Network.Deny = []string{"xn--ü.example"}
	var ke *KeyError
	if err := c.Validate(testDrivers); !errors.As(err, &ke) || ke.Key != "network.deny[0]" || !strings.Contains(err.Error(), "internationalised") {
		t.Errorf("Validate() with an invalid internationalised name = %v, want a problem at network.deny[0]", err)
	}
}

func TestCheckKeysSuggests(t *testing.T) {
	raw := map[string]any{
		"netwrok": map[string]any{"default": "deny"},
		"sandbox": map[string]any{"limits": map[string]any{"memroy": "1G", "pids": 10}},
		"web":     map[string]any{"fetch": map[string]any{"timeout": "3s"}},
		"zzzzzz":  1,
	}
	errs := CheckKeys(raw)
	got := make([]string, len(errs))
	for i, e := range errs {
		got[i] = e.Error()
	}
	want := []string{
		`netwrok: is not a known setting; did you mean "network"?`,
		`sandbox.limits.memroy: is not a known setting; did you mean "memory"?`,
		`zzzzzz: is not a known setting`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("CheckKeys() =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"512MiB", 512 << 20}, {"2G", 2 << 30}, {"1gb", 1e9}, {"100", 100}, {"64k", 64 << 10},
	} {
		if got, err := ParseSize(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "12XB", "-1G", "0", "1.5G", "G"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) succeeded, want error", in)
		}
	}
}

func TestValidateHomeAllow(t *testing.T) {
	c := Default()
	c.Sandbox.Home.Allow = []string{"~/go", "/opt/go", "~/../etc", "~/"}
	err := c.Validate(testDrivers)
	var es Errors
	if !errors.As(err, &es) || len(es) != 3 {
		t.Fatalf("Validate() = %v, want 3 problems (absolute, .., bare ~/)", err)
	}
	for i, e := range es {
		var ke *KeyError
		if want := fmt.Sprintf("sandbox.home.allow[%d]", i+1); !errors.As(e, &ke) || ke.Key != want {
			t.Errorf("problem %d is %v, want one at %s", i, e, want)
		}
	}
}

// testDrivers stands for cmd/dsh's driver list, which Validate is given.
var testDrivers = []string{"native", "docker", "host"}

// sandbox.driver takes only a name of the list Validate is given, and a
// problem names them all.
func TestValidateDriverAsksTheList(t *testing.T) {
	c := Default()
	c.Sandbox.Driver = "docker"
	if err := c.Validate([]string{"native", "docker"}); err != nil {
		t.Errorf("Validate() of a listed driver = %v, want nil", err)
	}
	err := c.Validate([]string{"native", "vm"})
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != "sandbox.driver" || !strings.Contains(ke.Msg, "use one of: native, vm") {
		t.Errorf("Validate() of a driver not in the list = %v, want a problem at sandbox.driver naming native, vm", err)
	}
}

// The policy sections are netpolicy.Config as it is: its fields are the
// keys, lower-cased, and Map renders them so.
func TestPolicyKeysAreNetpolicyConfigFields(t *testing.T) {
	keys := strings.Join(Keys(), " ")
	for _, k := range []string{"network.default", "network.ports", "network.allow", "network.deny", "web.policy.default", "web.policy.ports"} {
		if !strings.Contains(" "+keys+" ", " "+k+" ") {
			t.Errorf("Keys() lacks %s: %s", k, keys)
		}
	}
	web := Default().Map()["web"].(map[string]any)["policy"].(map[string]any)
	if web["default"] != "public" || fmt.Sprint(web["ports"]) != "[80 443]" {
		t.Errorf("Default().Map() web.policy = %v, want default public, ports [80 443]", web)
	}
}
