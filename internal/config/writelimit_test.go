package config

import (
	"errors"
	"strings"
	"testing"
)

// sandbox.limits.write takes a size of at least 1MiB or "unlimited";
// zero, empty and tiny budgets are refused with the key and the flag.
func TestValidateWriteLimit(t *testing.T) {
	for _, c := range []struct {
		value   string
		want    int64 // when valid
		inError string
	}{
		{"4GiB", 4 << 30, ""},
		{"1MiB", 1 << 20, ""},
		{"unlimited", 0, ""},
		{" UNLIMITED ", 0, ""},
		{"0", 0, "not a size"},
		{"", 0, "not a size"},
		{"64k", 0, "at least 1MiB"},
		{"lots", 0, "--write-limit"},
	} {
		cfg := Default()
		cfg.Sandbox.Limits.Write = c.value
		err := cfg.Validate(testDrivers)
		if c.inError == "" {
			n, werr := WriteLimit(c.value)
			if err != nil || werr != nil || n != c.want {
				t.Errorf("%q: Validate() = %v, WriteLimit() = %d, %v; want %d", c.value, err, n, werr, c.want)
			}
			continue
		}
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != "sandbox.limits.write" || !strings.Contains(err.Error(), c.inError) {
			t.Errorf("%q: Validate() = %v, want a problem at sandbox.limits.write mentioning %q", c.value, err, c.inError)
		}
	}
}
