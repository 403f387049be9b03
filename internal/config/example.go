package config

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// policyDocs describe the keys of a policy section (network, web.policy)
// and of a policy file (dsh --policy FILE); docs/policy.md has the whole
// format.
var policyDocs = map[string]string{
	"default": "What a destination no allow or deny entry decides gets: deny, or public\n(any globally reachable address, on the ports below).",
	"ports":   "Ports allowed for destinations that only the default public admits;\nempty means any port. Allow entries are not limited by it.",
	"allow":   "Allow entries: host, *.host, host:port, *.host:port, IP, IP:port,\n[IPv6]:port, CIDR, * or *:port. Only IP and CIDR entries unlock\nprivate or special-purpose addresses.",
	"deny":    "Deny entries, in the same forms; deny wins over allow.",
}

// keyDocs describe every configuration key. TestEveryKeyIsDocumented
// keeps it complete, and Example renders it, so the example
// configuration cannot drift from Keys and Default.
var keyDocs = map[string]string{
	"sandbox.driver":                 "Sandbox driver: native (namespaces), docker, or host (no confinement;\naccepted only with --unconfined). Flag --driver.",
	"sandbox.image":                  "Image of the docker driver. Flag --image.",
	"sandbox.limits.memory":          "Memory limit of a world: a size such as 512MiB or 2G (k, m, g are\nbinary, kb, mb, gb decimal), at least 8MiB. Flag --memory.",
	"sandbox.limits.pids":            "Maximum number of processes in a world, 1 to 4194304. Flag --pids.",
	"sandbox.limits.cpus":            "CPUs' worth of time, 0.01 to this host's CPUs. The default is 2, or\nevery CPU of a host with fewer. Flag --cpus.",
	"sandbox.limits.off":             "Run worlds without memory, pids and cpu limits, for hosts where dsh\ncannot write cgroups. Filesystem, network and syscall confinement stay.",
	"sandbox.limits.write":           "Write budget of a world: a size such as 4GiB (at least 1MiB), or\nunlimited. No file it writes grows past it (RLIMIT_FSIZE: EFBIG), and\nits tmpfs mounts (/tmp, /dev/shm) hold no more together. Stays on with\nlimits off. Flag --write-limit.",
	"sandbox.masks":                  "Extra host paths (absolute or ~/path) hidden inside a world, beside\nthe built-in list of credential locations.",
	"sandbox.home.allow":             "The ~/path locations of the home a world may read (read-only); the\nrest of the home is hidden. An empty list hides the whole home.",
	"sandbox.protected":              "Workspace paths read-only in every world, present or not (a missing\none gets an empty read-only placeholder for the world's life); a\ntrailing slash marks a directory. Replaces the built-in list: an entry\nleft out can be written by a world.",
	"sandbox.unix_sockets":           "Let a world's processes create unix sockets (and so connect to any\nsocket in their view they may write).",
	"sandbox.mounts":                 "Extra bind mounts, SRC:DST[:ro|rw] with absolute paths. A source outside\nthe workspace is read-only unless :rw says so. Flag -v/--mount adds one.",
	"sandbox.root":                   "The world's view of the host's root: host (read-only, masked) or\nminimal (only /usr, /bin, /sbin, /lib* and an allow-list of /etc; native\ndriver only). Flag --root.",
	"web.fetch.timeout":              "Timeout of one fetch: a duration such as 30s or 2m.",
	"web.fetch.max_bytes":            "Largest response body read, in bytes.",
	"web.fetch.max_chars":            "Largest text returned, in characters.",
	"web.fetch.max_redirects":        "Redirects followed at most.",
	"web.search.provider":            "Search provider: searxng or brave; empty picks the one configured.",
	"web.search.searxng_url":         "Base URL of a SearXNG instance.",
	"web.search.brave_key_env":       "Environment variable holding the Brave Search API key.",
	"proxy.listen":                   "Address dsh proxy serves on: host:port or unix:PATH. Flag --listen.",
	"proxy.audit":                    "Egress audit log: a file (one JSON line per connection and request),\n- for stdout, or empty for none. Flag --audit.",
	"proxy.metrics":                  "host:port of dsh proxy's Prometheus metrics and /healthz; empty for\nnone. Flag --metrics.",
	"sandbox.workspace.mode":         "How a world sees the workspace: rw, ro (read-only: writes fail with\nEROFS) or overlay (copy-on-write: the workspace is untouched, dsh run\nreports the change set, --apply copies it in). Flag --workspace-mode.",
	"sandbox.workspace.overlay_size": "Most an overlay world can write (its upper layer, a tmpfs charged to\nthe world's memory limit): at least 1MiB, at most the memory limit;\nempty is half the memory limit, at most 1GiB. Flag --overlay-size.",
	"lsp.servers":                    "Language servers beside the presets (gopls, typescript-language-server,\npyright-langserver, clangd, rust-analyzer), each run inside the world:\n{id, command, args, env: [KEY=VALUE], extensions: {\".go\": go},\ninitialization_options and settings (JSON text), readiness: none|progress|log|quiescent, readiness_pattern,\nreadiness_timeout, startup_timeout, request_timeout, image}. A server\nwith a preset's id or extension replaces that preset.",
	"mcp.servers":                    mcpServersDoc,
	"workspaces.root":                "State root of the workspaces: a directory per workspace (its state and\nfiles). Empty is /var/lib/dsh/workspaces for root, else\n$XDG_STATE_HOME/dsh/workspaces. Flag --workspace-root.",
	"workspaces.max":                 "Most workspaces at once; a create beyond it is refused (429). Flag\n--max-workspaces.",
	"workspaces.ttl":                 "TTL of a workspace whose create gives none. Flag --workspace-ttl.",
	"workspaces.max_ttl":             "Most TTL a create or an extend may ask for. Flag --workspace-max-ttl.",
	"workspaces.idle_timeout":        "Idle timeout of a workspace whose create gives none: its world is\nclosed (files kept) after this long without a request.",
	"workspaces.max_file":            "Largest file read or written through the API, in bytes (413 beyond).\nFlag --max-file.",
	"workspaces.pool":                "Warm pools, each TEMPLATE:N: N pre-opened worlds of\nDRIVER[,image=IMG][,memory=SIZE][,pids=N][,cpus=X], such as native:4.\nA create with that driver, image and limits takes one. Flag --pool.",
}

// sectionDocs introduce the sections of the example.
var sectionDocs = map[string]string{
	"sandbox":           "How worlds (dsh run, dsh world) are confined.",
	"sandbox.workspace": "The workspace of a world: read-write, read-only or an overlay.",
	"network":           "Egress policy of processes inside a world (see docs/policy.md).",
	"web":               "dsh fetch and dsh search.",
	"web.policy":        "Egress policy of web fetches (see docs/policy.md).",
	"proxy":             "dsh proxy, the egress proxy.",
	"mcp":               "dsh mcp: third-party MCP servers, each confined in its own world.",
	"workspaces":        "Workspaces hosted by dsh serve --http (docs/WORKSPACES.md).",
}

// hostDependent are keys whose default depends on the host; the example
// leaves them commented out, so that a file written on one host is valid
// on every other.
var hostDependent = map[string]bool{"sandbox.limits.cpus": true}

// keyDoc is the description of key.
func keyDoc(key string) string {
	if d, ok := keyDocs[key]; ok {
		return d
	}
	for _, sec := range []string{"network.", "web.policy."} {
		if leaf, ok := strings.CutPrefix(key, sec); ok {
			return policyDocs[leaf]
		}
	}
	return ""
}

// Example is a configuration file that sets every key to its default,
// each with a comment saying what it does and its environment variable.
// dsh config init writes it, and docs/config.example.yaml is it.
func Example() string {
	var b strings.Builder
	b.WriteString(`# dsh configuration: every setting, set to its default.
# Written by "dsh config init"; check it with "dsh config validate".
# dsh reads ./dsh.yaml, else $XDG_CONFIG_HOME/dsh/config.yaml (or --config
# FILE, $DSH_CONFIG). Environment variables DSH_<KEY> (dots as
# underscores) override the file, and flags override both.
`)
	writeExample(&b, reflect.ValueOf(Default()), "", 0)
	return b.String()
}

func writeExample(b *strings.Builder, v reflect.Value, prefix string, depth int) {
	t := v.Type()
	ind := strings.Repeat("  ", depth)
	comment := func(text string) {
		for _, l := range strings.Split(text, "\n") {
			b.WriteString(ind + "# " + l + "\n")
		}
	}
	for i := range t.NumField() {
		name := keyName(t.Field(i))
		if name == "" {
			continue
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		f := v.Field(i)
		if f.Kind() == reflect.Struct {
			if i > 0 || depth == 0 {
				b.WriteString("\n")
			}
			if d := sectionDocs[key]; d != "" {
				comment(d)
			}
			b.WriteString(ind + name + ":\n")
			writeExample(b, f, key, depth+1)
			continue
		}
		comment(keyDoc(key) + "\nEnvironment: " + EnvName(key) + ".")
		lead := ind
		if hostDependent[key] {
			lead += "# "
		}
		if f.Kind() == reflect.Slice {
			if f.Len() == 0 {
				b.WriteString(lead + name + ": []\n")
				continue
			}
			b.WriteString(lead + name + ":\n")
			for j := range f.Len() {
				b.WriteString(lead + "  - " + scalar(f.Index(j).Interface()) + "\n")
			}
			continue
		}
		b.WriteString(lead + name + ": " + scalar(f.Interface()) + "\n")
	}
}

// scalar is v as a YAML scalar.
func scalar(v any) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("config example: %v", err))
	}
	return strings.TrimSuffix(string(out), "\n")
}

// EnvName is the environment variable that overrides key
// (sandbox.limits.memory: DSH_SANDBOX_LIMITS_MEMORY).
func EnvName(key string) string {
	return "DSH_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}
