// Package depspin keeps modules in go.mod while the packages that use them are being written; delete it once each is imported for real.
package deps
import (
 _ "github.com/docker/docker/client"
 _ "github.com/containerd/cgroups/v3/cgroup1"
 _ "github.com/opencontainers/runtime-spec/specs-go"
 _ "github.com/modelcontextprotocol/go-sdk/mcp"
 _ "golang.org/x/sys/unix"
 _ "golang.org/x/net/idna"
 _ "github.com/elastic/go-seccomp-bpf"
 _ "github.com/hashicorp/yamux"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "github.com/JohannesKaufmann/html-to-markdown/v2"
 _ "github.com/google/go-cmp/cmp"
 _ "go.yaml.in/yaml/v3"
)
