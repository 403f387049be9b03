package api

import (
	"strings"
	"time"
)

// Routes are the routes the API serves, as "METHOD /path/{param}" with
// OpenAPI's path syntax ({path...} is {path}); the MCP endpoint, which
// takes every method, is listed with the methods of Streamable HTTP.
func Routes() []string {
	var out []string
	for _, rt := range routes {
		p := strings.ReplaceAll(rt.pattern, "{path...}", "{path}")
		if rt.method == "" {
			for _, m := range []string{"GET", "POST", "DELETE"} {
				out = append(out, m+" "+p)
			}
			continue
		}
		out = append(out, rt.method+" "+p)
	}
	return out
}

// SetWriteStall bounds one write of an exec's answer, until the test
// ends.
func SetWriteStall(t interface{ Cleanup(func()) }, d time.Duration) {
	old := writeStall
	writeStall = d
	t.Cleanup(func() { writeStall = old })
}
