package bridge

import (
	"regexp"
	"strings"
	"testing"
)

// The expected names were computed with the reference implementation
// (publicToolName of the harness's MCP client, run under node): the
// algorithm is a compatibility contract, and these pin it.
var publicNameTests = []struct{ server, raw, want string }{
	{"github", "create_issue", "mcp__github__create_issue"},
	{"web", "search", "mcp__web__search"},
	{"fs", "read_file", "mcp__fs__read_file"},
	{"everything", "get-tiny-image", "mcp__everything__get-tiny-image"},
	// Replaced characters: hashed, so read.file and read_file differ.
	{"fs", "read.file", "mcp__fs__read_file_a70c27002fc8"},
	{"server", "tool with spaces", "mcp__server__tool_with_spaces_e8b0dd050bf7"},
	{"gh", "ns/tool:v1", "mcp__gh__ns_tool_v1_6d4e5d896596"},
	// One "_" per UTF-16 code unit: é is one, an emoji two.
	{"srv", "héllo", "mcp__srv__h_llo_69aafb962afa"},
	{"srv", "emoji😀", "mcp__srv__emoji___4fa17563a452"},
	// Exactly 64 is kept; 65 is cut to 51 and hashed.
	{"a", strings.Repeat("x", 56), "mcp__a__" + strings.Repeat("x", 56)},
	{"a", strings.Repeat("x", 57), "mcp__a__xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_1126ec5f8614"},
	{"a", strings.Repeat("x", 58), "mcp__a__xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_62e18512fd35"},
	{"github", strings.Repeat("a", 128), "mcp__github__aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_9175464f66d9"},
	// Two identities that spell the same clean name: the registry
	// refuses the second (see TestCrossServerConflictRollsBack).
	{"x", "_b", "mcp__x___b"},
	{"x_", "b", "mcp__x___b"},
}

func TestPublicName(t *testing.T) {
	for _, tt := range publicNameTests {
		if got := PublicName(tt.server, tt.raw); got != tt.want {
			t.Errorf("PublicName(%q, %q) = %q, want %q", tt.server, tt.raw, got, tt.want)
		}
	}
}

var publicNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func FuzzPublicName(f *testing.F) {
	for _, tt := range publicNameTests {
		f.Add(tt.server, tt.raw)
	}
	f.Fuzz(func(t *testing.T, server, raw string) {
		if !ValidServerName(server) {
			return
		}
		got := PublicName(server, raw)
		if !publicNameRE.MatchString(got) {
			t.Fatalf("PublicName(%q, %q) = %q: not 1-64 characters of [A-Za-z0-9_-]", server, raw, got)
		}
		if got != PublicName(server, raw) {
			t.Fatalf("PublicName(%q, %q) is not deterministic", server, raw)
		}
		if !MayOwn(server, got) {
			t.Fatalf("MayOwn(%q, PublicName(%q, %q) = %q) is false", server, server, raw, got)
		}
		if !strings.HasPrefix(got, "mcp__") {
			t.Fatalf("PublicName(%q, %q) = %q lacks the mcp__ marker", server, raw, got)
		}
	})
}

func TestValidServerName(t *testing.T) {
	for name, want := range map[string]bool{
		"github": true, "a": true, "A-b_9": true, strings.Repeat("x", 32): true,
		"": false, strings.Repeat("x", 33): false, "a.b": false, "a b": false, "ünï": false, "a/b": false,
	} {
		if got := ValidServerName(name); got != want {
			t.Errorf("ValidServerName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestMayOwn(t *testing.T) {
	long := strings.Repeat("s", 32)
	for _, tt := range []struct {
		server, public string
		want           bool
	}{
		{"fs", "mcp__fs__read_file", true},
		{"fs", "mcp__fs2__read_file", false},
		{"fs", "mcp__fs__", true}, // an empty raw name
		{"a", PublicName("a", strings.Repeat("x", 80)), true},
		{long, PublicName(long, "tool_with_a_long_name"), true},
		{long, PublicName(strings.Repeat("s", 31)+"t", "tool_with_a_long_name"), false},
	} {
		if got := MayOwn(tt.server, tt.public); got != tt.want {
			t.Errorf("MayOwn(%q, %q) = %v, want %v", tt.server, tt.public, got, tt.want)
		}
	}
}
