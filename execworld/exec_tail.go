package execworld

import "sync"

// DefaultMaxOutputBytes is the tail kept of each output stream when a Cmd
// sets no cap, as the reference shell tool keeps.
const DefaultMaxOutputBytes = 64_000

// Output is what was kept of one output stream: exactly its last bytes.
type Output struct {
	// Data is the last min(Total, cap) bytes of the stream, exactly.
	Data []byte
	// Total is how many bytes the stream carried.
	Total int64
	// Truncated reports whether earlier bytes were dropped (Total > len(Data)).
	Truncated bool
}

func (o Output) String() string { return string(o.Data) }

// tail keeps exactly the last max bytes written to it, in a ring.
type tail struct {
	mu    sync.Mutex // guards the fields below
	buf   []byte     // ring storage, grows up to max
	max   int
	start int // index of the oldest byte once the ring is full
	total int64
}

func newTail(max int) *tail { return &tail{max: max} }

// Write never fails and never blocks on a reader: a process must not stall
// because nobody reads its output.
func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.total += int64(n)
	if t.max == 0 {
		return n, nil
	}
	if len(p) >= t.max {
		// Only the last max bytes of p can survive.
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		t.start = 0
		return n, nil
	}
	if room := t.max - len(t.buf); room > 0 {
		k := min(room, len(p))
		t.buf = append(t.buf, p[:k]...)
		p = p[k:]
	}
	// The ring is full: overwrite the oldest bytes.
	for len(p) > 0 {
		k := copy(t.buf[t.start:], p)
		p = p[k:]
		t.start = (t.start + k) % t.max
	}
	return n, nil
}

// snapshot returns a copy of what is kept, oldest byte first.
func (t *tail) snapshot() Output {
	t.mu.Lock()
	defer t.mu.Unlock()
	data := make([]byte, 0, len(t.buf))
	data = append(data, t.buf[t.start:]...)
	data = append(data, t.buf[:t.start]...)
	return Output{Data: data, Total: t.total, Truncated: t.total > int64(len(data))}
}
