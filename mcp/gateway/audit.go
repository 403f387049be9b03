package gateway

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/dsh-dev/dsh/internal/lazyre"
)

// auditRecord is one audit line: one tool call.
type auditRecord struct {
	Time       string         `json:"time"`
	Call       string         `json:"call"`
	Session    string         `json:"session"`
	World      string         `json:"world,omitempty"`
	Tool       string         `json:"tool"`
	Arguments  map[string]any `json:"arguments"`
	Status     string         `json:"status"` // ok, tool_error, error
	ExitCode   *int           `json:"exit_code,omitempty"`
	Error      string         `json:"error,omitempty"`
	DurationMs float64        `json:"duration_ms"`
	BytesIn    int            `json:"bytes_in"`
	BytesOut   int            `json:"bytes_out"`
}

// auditor writes audit lines, one whole line per Write.
type auditor struct {
	mu sync.Mutex
	w  io.Writer
}

func (a *auditor) write(r *auditRecord) {
	if a.w == nil {
		return
	}
	r.Time = time.Now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	b = append(b, '\n')
	a.mu.Lock()
	a.w.Write(b)
	a.mu.Unlock()
}

// secretKey matches argument names whose values are never logged.
var secretKey = lazyre.New(`(?i)key|token|secret|passw|passphrase|credential|auth|cookie`)

// bulkKeys are arguments logged by size only: file content and input
// can be large and private.
var bulkKeys = map[string]bool{"content": true, "stdin": true, "old_text": true, "new_text": true}

// maxAuditString caps a logged string argument.
const maxAuditString = 512

// redact returns the arguments as they are logged: secrets replaced,
// bulk values by their size, long strings cut.
func redact(raw json.RawMessage) map[string]any {
	var args map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &args) != nil {
		return map[string]any{}
	}
	for k, v := range args {
		switch {
		case secretKey().MatchString(k):
			args[k] = "[redacted]"
		case bulkKeys[k]:
			if s, ok := v.(string); ok {
				args[k] = map[string]int{"bytes": len(s)}
			}
		default:
			args[k] = cutValue(v)
		}
	}
	return args
}

// envSecret matches NAME=value entries of a command line whose value is
// a secret, as the environment scrub names them.
var envSecret = lazyre.New(`(?i)\b([A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSW[A-Z]*|PASSPHRASE|CREDENTIAL[A-Z]*|AUTH[A-Z]*)[A-Z0-9_]*)=\S+`)

func cutValue(v any) any {
	switch x := v.(type) {
	case string:
		x = envSecret().ReplaceAllString(x, "$1=[redacted]")
		if len(x) > maxAuditString {
			return x[:maxAuditString] + "…"
		}
		return x
	case []any:
		for i := range x {
			x[i] = cutValue(x[i])
		}
		return x
	}
	return v
}
