package bridge

import (
	"errors"
	"fmt"
)

var (
	// ErrClosed is returned by a Bridge after Close.
	ErrClosed = errors.New("bridge: closed")
	// ErrUnknownTool is returned by Call for a public name no server has.
	ErrUnknownTool = errors.New("bridge: no such tool")
	// ErrUnavailable is returned by Call when the tool's server is not
	// connected (failed, or not ready within the call's time).
	ErrUnavailable = errors.New("bridge: server unavailable")
)

// ToolError is a tool call whose result was isError: the server ran the
// tool and reports that it failed. Result has the whole result.
type ToolError struct {
	Tool   string // the public name
	Result *Result
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("tool %s failed: %s", e.Tool, e.Result.Text)
}

// ConfigError is every problem with a Bridge's servers, found at once.
type ConfigError struct{ Problems []string }

func (e *ConfigError) Error() string {
	s := fmt.Sprintf("bridge: %d problem(s) with the MCP servers:", len(e.Problems))
	for _, p := range e.Problems {
		s += "\n  " + p
	}
	return s
}
