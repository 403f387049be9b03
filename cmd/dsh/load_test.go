package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/dsh-dev/dsh/internal/config"
)

// yamlDefaultsViper is a viper holding the defaults the way a YAML file
// holding them would give them: config.Default() written out and read
// back, as newViper once did.
func yamlDefaultsViper(t *testing.T) *viper.Viper {
	t.Helper()
	b, err := yaml.Marshal(config.Default().Map())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	v := viper.New()
	v.SetConfigType("yaml")
	for _, k := range config.Keys() {
		v.SetDefault(k, lookup(m, k))
	}
	return v
}

// decodeViper is what loadRaw does with a viper: the environment over it,
// then Unmarshal.
func decodeViper(t *testing.T, v *viper.Viper) config.Config {
	t.Helper()
	v.SetEnvPrefix("DSH")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	var c config.Config
	if err := v.Unmarshal(&c); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	return c
}

// newViper gives viper the defaults as Go values, not through YAML: they
// must decode to config.Default(), and to what the YAML round trip gave,
// alone, under a file that sets some keys and under the environment.
func TestNewViperDefaultsDecodeAsTheirYAML(t *testing.T) {
	if got, want := decodeViper(t, newViper()), config.Default(); !reflect.DeepEqual(got, want) {
		t.Fatalf("defaults decode to\n%+v\nwant\n%+v", got, want)
	}
	file := []byte("sandbox:\n  masks: [/srv/secret]\n  limits:\n    cpus: 1.5\nnetwork:\n  allow: [example.com]\n")
	for _, env := range []map[string]string{
		nil,
		{"DSH_SANDBOX_LIMITS_PIDS": "77", "DSH_WEB_POLICY_PORTS": "8080,8443", "DSH_SANDBOX_PROTECTED": "a,b/"},
	} {
		for k, val := range env {
			t.Setenv(k, val)
		}
		for _, withFile := range []bool{false, true} {
			direct, viaYAML := newViper(), yamlDefaultsViper(t)
			if withFile {
				for _, v := range []*viper.Viper{direct, viaYAML} {
					if err := v.MergeConfig(bytes.NewReader(file)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got, want := decodeViper(t, direct), decodeViper(t, viaYAML); !reflect.DeepEqual(got, want) {
				t.Errorf("env %v, file %v: decodes to\n%+v\nthrough YAML to\n%+v", env, withFile, got, want)
			}
		}
	}
}

// A configuration decoded from the defaults shares nothing with them: a
// command that changes its lists (appending masks, say) changes no later
// decode of the same viper (mergeFiles decodes one viper several times).
func TestNewViperDecodesShareNoLists(t *testing.T) {
	v := newViper()
	first := decodeViper(t, v)
	first.Sandbox.Protected[0] = "changed"
	first.Sandbox.Home.Allow[0] = "changed"
	first.Web.Policy.Ports[0] = 1
	if got := decodeViper(t, v); !reflect.DeepEqual(got, config.Default()) {
		t.Errorf("after changing a decoded configuration, the defaults decode to\n%+v", got)
	}
}

// Each source alone takes the configuration off the defaults (loadRaw
// decodes through viper only when one sets a key), and with none the
// configuration is config.Default().
func TestLoadEachSourceAlone(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no user file
	t.Setenv("DSH_CONFIG", "")               // none named
	t.Chdir(t.TempDir())                     // no ./dsh.yaml
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("sandbox:\n  limits:\n    pids: 55\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	try := func(t *testing.T, args ...string) (*loaded, error) {
		t.Helper()
		cmd := &cobra.Command{Use: "x"}
		cmd.Flags().String("config", "", "")
		cmd.Flags().String("audit", "", "")
		bindConfigFlag(cmd, "audit", "proxy.audit")
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		return loadRaw(cmd)
	}
	load := func(t *testing.T, args ...string) *loaded {
		t.Helper()
		l, err := try(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	t.Run("none", func(t *testing.T) {
		l := load(t)
		if !reflect.DeepEqual(*l.cfg, config.Default()) {
			t.Errorf("got\n%+v\nwant the defaults\n%+v", *l.cfg, config.Default())
		}
		for k, s := range l.sources {
			if s != "default" {
				t.Errorf("%s comes from %q", k, s)
			}
		}
	})
	t.Run("env", func(t *testing.T) {
		t.Setenv("DSH_SANDBOX_LIMITS_PIDS", "77")
		if got := load(t).cfg.Sandbox.Limits.Pids; got != 77 {
			t.Errorf("pids = %d, want 77 from the environment", got)
		}
	})
	t.Run("flag", func(t *testing.T) {
		if got := load(t, "--audit", "/var/tmp/audit.jsonl").cfg.Proxy.Audit; got != "/var/tmp/audit.jsonl" {
			t.Errorf("proxy.audit = %q, want the flag's", got)
		}
	})
	t.Run("file", func(t *testing.T) {
		if got := load(t, "--config", file).cfg.Sandbox.Limits.Pids; got != 55 {
			t.Errorf("pids = %d, want 55 from %s", got, file)
		}
	})
	// A variable named after a section hides the section's keys from
	// viper, which then decoded them to zero (a fetch without limits):
	// it is refused, whether the defaults stand alone or a file is read.
	t.Run("section", func(t *testing.T) {
		t.Setenv("DSH_WEB_FETCH", "x")
		for _, args := range [][]string{nil, {"--config", file}} {
			l, err := try(t, args...)
			if err == nil || !strings.Contains(err.Error(), "DSH_WEB_FETCH names the section web.fetch") {
				var fetch any
				if l != nil {
					fetch = l.cfg.Web.Fetch
				}
				t.Errorf("with %q: err = %v (fetch %+v), want DSH_WEB_FETCH refused", args, err, fetch)
			}
		}
	})
}
