package config

import (
	"strings"
	"testing"
)

func TestParsePool(t *testing.T) {
	p, err := ParsePool("docker,image=dsh/base:latest,memory=256MiB,pids=64,cpus=0.5:3")
	if err != nil || p != (PoolEntry{Driver: "docker", Image: "dsh/base:latest", Memory: "256MiB", Pids: 64, CPUs: 0.5, Size: 3}) {
		t.Errorf("ParsePool = %+v, %v", p, err)
	}
	if p, err := ParsePool("native:4"); err != nil || p.Driver != "native" || p.Size != 4 {
		t.Errorf("native:4 = %+v, %v", p, err)
	}
	for in, want := range map[string]string{
		"native":               "no :N",
		"native:0":             "1 to 64",
		"native:65":            "1 to 64",
		":2":                   "no driver",
		"native,memory=lots:1": "memory",
		"native,pids=-1:1":     "pids",
		"native,cpus=0:1":      "cpus",
		"native,colour=red:1":  "unknown key",
		"native,image:1":       "KEY=VALUE",
	} {
		if _, err := ParsePool(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePool(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

func TestValidateWorkspaces(t *testing.T) {
	c := Default()
	c.Workspaces = Workspaces{Root: "rel", Max: -1, TTL: "2h", MaxTTL: "1h", IdleTimeout: "soon", MaxFile: -1, Pool: []string{"native:99"}}
	err := c.Validate([]string{"native"})
	if err == nil {
		t.Fatal("a bad workspaces section validated")
	}
	for _, key := range []string{"workspaces.root", "workspaces.max", "workspaces.ttl", "workspaces.idle_timeout", "workspaces.max_file", "workspaces.pool[0]"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("no problem named %s in: %v", key, err)
		}
	}
}
