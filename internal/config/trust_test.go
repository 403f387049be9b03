package config

import (
	"strings"
	"testing"
)

// Every key of the configuration has a row in the trust table, and every
// row is a key: a new key is classified when it is added.
func TestEveryKeyIsClassified(t *testing.T) {
	known := map[string]bool{}
	for _, k := range Keys() {
		known[k] = true
		if _, ok := trustTable[k]; !ok {
			t.Errorf("key %s has no row in the trust table (internal/config/trust.go); class it Widening unless a smaller value of it only confines more", k)
		}
	}
	for k := range trustTable {
		if !known[k] {
			t.Errorf("trust table row %s is no configuration key", k)
		}
	}
}

func TestUnknownKeyIsWidening(t *testing.T) {
	if c := KeyClass("sandbox.no_such_key"); c.Name != Widening.Name || c.narrows != nil {
		t.Errorf("KeyClass(unknown) = %q, want widening", c.Name)
	}
	// An unknown key widens whatever its value, unless it is the same.
	if w := Widenings([]string{"sandbox.no_such_key"}, Default(), Default()); len(w) != 0 {
		t.Errorf("an unknown key equal in both = %v, want nothing", w)
	}
}

// Each class, by the comparison it makes.
func TestClassesNarrow(t *testing.T) {
	for _, c := range []struct {
		class         Class
		before, after any
		narrows       bool
	}{
		{SmallerSize, "2GiB", "512MiB", true},
		{SmallerSize, "2GiB", "2048m", true},
		{SmallerSize, "2GiB", "3G", false},
		{SmallerSize, "2GiB", "2049MiB", false},
		{SmallerSize, "2GiB", "lots", false},
		{SmallerWriteLimit, "4GiB", "1GiB", true},
		{SmallerWriteLimit, "unlimited", "1GiB", true},
		{SmallerWriteLimit, "unlimited", "unlimited", true},
		{SmallerWriteLimit, "4GiB", "unlimited", false},
		{SmallerWriteLimit, "4GiB", "8GiB", false},
		{Smaller, 1024, 100, true},
		{Smaller, 1024, 1024, true},
		{Smaller, 1024, 1025, false},
		{Smaller, 2.0, 0.5, true},
		{Smaller, 2.0, 2.5, false},
		{Smaller, 2.0, "1", false},
		{OnlyFalse, true, false, true},
		{OnlyFalse, false, false, true},
		{OnlyFalse, false, true, false},
		{OnlyDeny, "public", "deny", true},
		{OnlyDeny, "deny", "public", false},
		{OnlyDeny, "deny", "maybe", false},
		{Ranked("ro", "overlay", "rw"), "rw", "overlay", true},
		{Ranked("ro", "overlay", "rw"), "overlay", "ro", true},
		{Ranked("ro", "overlay", "rw"), "ro", "overlay", false},
		{Ranked("ro", "overlay", "rw"), "ro", "", false},
		{Fewer, []string{"a:443", "b:443"}, []string{"a:443"}, true},
		{Fewer, []string{"a:443"}, []string{}, true},
		{Fewer, []string{}, []string{"127.0.0.1:9"}, false},
		{Fewer, []string{"a:443"}, []string{"a:443", "*"}, false},
		{More, []string{"/x"}, []string{"/x", "/y"}, true},
		{More, []string{}, []string{"/y"}, true},
		{More, []string{"/x", "/y"}, []string{"/y"}, false},
		{More, []string{"/x"}, []string{}, false},
		{FewerPorts, []int{80, 443}, []int{443}, true},
		{FewerPorts, []int{}, []int{443}, true},
		{FewerPorts, []int{443}, []int{}, false}, // empty is every port
		{FewerPorts, []int{443}, []int{443, 22}, false},
		{Widening, "native", "docker", false},
	} {
		got := c.class.narrows != nil && c.class.narrows(c.before, c.after)
		if got != c.narrows {
			t.Errorf("%s: narrows(%v, %v) = %v, want %v", c.class.Name, c.before, c.after, got, c.narrows)
		}
	}
}

func TestWideningsNamesEachWideningKey(t *testing.T) {
	before := Default()
	after := Default()
	after.Sandbox.Limits.Off = true
	after.Network.Allow = []string{"127.0.0.1:9"}
	after.Sandbox.Limits.Pids = 10 // narrows
	after.Sandbox.Image = "dsh/base:latest"
	keys := []string{"network.allow", "sandbox.image", "sandbox.limits.off", "sandbox.limits.pids"}
	w := Widenings(keys, before, after)
	var got []string
	for _, k := range w {
		got = append(got, k.Key)
	}
	if strings.Join(got, " ") != "network.allow sandbox.limits.off" {
		t.Fatalf("Widenings = %v, want network.allow sandbox.limits.off", got)
	}
	if msg := w[1].Error(); !strings.Contains(msg, "sandbox.limits.off: set to true, would otherwise be false") || !strings.Contains(msg, "only set false") {
		t.Errorf("message %q does not say the key, values and rule", msg)
	}
	// A key the file does not set is not judged, whatever its value.
	if w := Widenings([]string{"sandbox.limits.pids"}, before, after); len(w) != 0 {
		t.Errorf("Widenings of a narrowing key alone = %v, want none", w)
	}
}

// Narrowing is relative to the value the key would otherwise have: the
// user's own configuration, not the default.
func TestWideningIsRelativeToBefore(t *testing.T) {
	before := Default()
	before.Sandbox.Limits.Memory = "256MiB"
	after := before
	after.Sandbox.Limits.Memory = "1GiB" // below the default, above the user's
	if w := Widenings([]string{"sandbox.limits.memory"}, before, after); len(w) != 1 {
		t.Errorf("1GiB over a user's 256MiB = %v, want one widening", w)
	}
}

func TestFileKeys(t *testing.T) {
	raw := map[string]any{
		"Sandbox": map[string]any{"limits": map[string]any{"off": true}, "masks": []any{"/x"}},
		"network": map[string]any{"allow": []any{}},
		"bogus":   1,
	}
	got := strings.Join(FileKeys(raw), " ")
	if got != "network.allow sandbox.limits.off sandbox.masks" {
		t.Errorf("FileKeys = %q", got)
	}
}
