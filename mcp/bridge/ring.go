package bridge

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// DefaultStderrBytes is how much of a server's stderr a Ring keeps.
const DefaultStderrBytes = 8 << 10

// Ring keeps the last bytes written to it: a server's stderr, drained
// continuously (a server blocks once its stderr pipe is full) and quoted
// in the errors that concern the server. The zero value keeps
// DefaultStderrBytes. It is safe for concurrent use.
type Ring struct {
	// Max is the number of bytes kept. If zero, DefaultStderrBytes.
	Max int

	mu      sync.Mutex // guards the fields below
	buf     []byte
	dropped bool
}

// Write keeps the tail of p; it never fails.
func (r *Ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	max := r.Max
	if max <= 0 {
		max = DefaultStderrBytes
	}
	r.buf = append(r.buf, p...)
	if over := len(r.buf) - max; over > 0 {
		r.buf = append(r.buf[:0], r.buf[over:]...)
		r.dropped = true
	}
	return len(p), nil
}

// String is what is kept, trimmed, with "…" in front when earlier bytes
// were dropped. Invalid UTF-8 (a cut in the middle of a character) is
// replaced.
func (r *Ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := strings.TrimSpace(strings.ToValidUTF8(string(r.buf), string(utf8.RuneError)))
	if r.dropped && s != "" {
		s = "…" + s
	}
	return s
}
