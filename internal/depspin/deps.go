// Package depspin keeps modules in go.mod while the packages that use them are being written; delete it once each is imported for real.
package deps

import (
	_ "github.com/JohannesKaufmann/html-to-markdown/v2"
	_ "github.com/containerd/cgroups/v3/cgroup1"
	_ "github.com/docker/docker/client"
	_ "github.com/elastic/go-seccomp-bpf"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/hashicorp/yamux"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/opencontainers/runtime-spec/specs-go"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/net/idna"
	_ "golang.org/x/sys/unix"
)
