package config

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// InternalEnv are the DSH_* variables dsh reads that are no configuration
// key: the config file's location, diagnostics, the hand-over between dsh
// and the init of a world, and the switches of dsh's own tests. A name
// ending in _ is a prefix. UnknownEnv does not warn about them.
var InternalEnv = []string{
	"DSH_CONFIG",       // the configuration file (dsh config --help)
	"DSH_SERVE_TOKEN",  // dsh serve --http: the bearer token without --token-file
	"DSH_SERVER",       // dsh world: the server's URL
	"DSH_SERVER_TOKEN", // dsh world: the token without --token-file
	"DSH_NATIVE_TRACE", // print the timings of dsh run, the native driver and its init
	"DSH_INIT_LOG",     // the sandbox init's log level (debug)
	"DSH_INIT_CONFIG",  // dsh -> sandbox init hand-over
	"DSH_NATIVE_INIT",  // dsh -> native init hand-over
	"DSH_NATIVE_PROXY_PORT",
	"DSH_NATIVE_UNIX_SOCKETS",
	"DSH_DOCKER_INIT_DIR", // docker driver: copy the init where the engine sees it (cmd/dsh/dockerinit.go)
	"DSH_REQUIRE_",        // tests: fail instead of skip (internal/testenv)
	"DSH_TEST_",           // tests
	"DSH_NATIVE_TEST_",    // tests
	"DSH_CONFORMANCE_",    // tests (execworld/conformance)
	"DSH_PROXYBENCH_",     // benchmarks
	"DSH_BENCH_",          // benchmarks
	"DSH_HOST_",           // tests
}

func internalEnv(name string) bool {
	for _, n := range InternalEnv {
		if name == n || strings.HasSuffix(n, "_") && strings.HasPrefix(name, n) {
			return true
		}
	}
	return false
}

// UnknownEnv returns a warning for every DSH_* variable of environ
// ("NAME=value" entries, as os.Environ gives them) that is neither a
// configuration key's variable nor one of InternalEnv, with the nearest
// key's variable as a suggestion, sorted by name.
func UnknownEnv(environ []string) []string {
	known := map[string]string{}
	for _, k := range allKeys() {
		known[EnvName(k)] = k
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "DSH_") || internalEnv(name) {
			continue
		}
		if _, ok := known[name]; ok || sectionEnv()[name] != "" {
			continue // a setting, or a section's (SectionEnv refuses it)
		}
		msg := name + " is not a dsh setting and is ignored"
		best, bestD := "", 1<<30
		for n := range known {
			if d := editDistance(name, n); d < bestD || d == bestD && n < best {
				best, bestD = n, d
			}
		}
		if best != "" && bestD <= max(2, len(name)/5) {
			msg += "; did you mean " + best + " (" + known[best] + ")?"
		}
		out = append(out, msg)
	}
	sort.Strings(out)
	return out
}

// SectionEnv returns a problem for every DSH_* variable of environ that
// is set (not empty) and names a section of the configuration
// (DSH_WEB_FETCH) rather than a setting. viper, reading the environment,
// takes such a variable for the section's value: it hides every key
// below it, which then decodes to its zero value (a fetch with no size
// limit, no cap on workspaces). Each is refused instead, naming the
// section's settings.
func SectionEnv(environ []string) Errors {
	var out Errors
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if sec := sectionEnv()[name]; sec != "" && value != "" && !internalEnv(name) {
			out = append(out, &KeyError{Key: sec, Msg: fmt.Sprintf("%s names the section %s, not a setting; unset it and set the section's keys instead, such as %s",
				name, sec, EnvName(firstKeyUnder(sec)))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Error() < out[j].Error() })
	return out
}

// sectionEnv maps the variable of every section to the section.
var sectionEnv = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for sec := range sections() {
		m[EnvName(sec)] = sec
	}
	return m
})

// firstKeyUnder is the first key of the section sec, by name.
func firstKeyUnder(sec string) string {
	for _, k := range allKeys() {
		if strings.HasPrefix(k, sec+".") {
			return k
		}
	}
	return sec
}
