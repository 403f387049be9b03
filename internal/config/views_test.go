package config

import (
	"strings"
	"testing"
)

// sandbox.mounts and sandbox.root are checked with the rules of package
// sandbox, each problem naming its key.
func TestValidateViews(t *testing.T) {
	c := Default()
	c.Sandbox.Mounts = []string{"/srv/ref:/ref:ro", "relative:/x", "/a:/proc/x"}
	c.Sandbox.Root = "tiny"
	err := c.Validate([]string{"native"})
	if err == nil {
		t.Fatal("Validate accepted bad mounts and root")
	}
	for _, want := range []string{
		`sandbox.mounts[1]: "relative:/x": the source "relative" is not an absolute path`,
		`sandbox.mounts[2]: "/a:/proc/x": destination /proc/x is in /proc`,
		`sandbox.root: "tiny" is not a root view; use host or minimal`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v\nwant it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "mounts[0]") {
		t.Errorf("Validate refused a good mount: %v", err)
	}
	c = Default()
	c.Sandbox.Root = "minimal"
	c.Sandbox.Mounts = []string{"/srv/ref:/ref"}
	if err := c.Validate([]string{"native"}); err != nil {
		t.Errorf("Validate(minimal root, one mount) = %v", err)
	}
}
