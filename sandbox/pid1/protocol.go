package pid1

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// protoVersion is the control protocol version. The client and the init
// are normally the same dsh binary; a mismatch is a clear start error.
const protoVersion = 3

// Stream kinds: the first byte of every stream.
const (
	kindControl byte = 'c'
	kindStdin   byte = 'i'
	kindStdout  byte = 'o'
	kindStderr  byte = 'e'
)

// headerSize is the size of the header that opens every stream: the kind
// byte and the process id, big endian.
const headerSize = 1 + 8

// Message size caps. A start request carries argv and env (the kernel's
// own limit for both together is a few MiB); the init's messages are
// small, and the client refuses anything bigger from the untrusted side.
const (
	maxRequestLine = 8 << 20
	maxReplyLine   = 64 << 10
)

func encodeHeader(kind byte, id uint64) []byte {
	b := make([]byte, headerSize)
	b[0] = kind
	binary.BigEndian.PutUint64(b[1:], id)
	return b
}

func decodeHeader(b []byte) (kind byte, id uint64) {
	return b[0], binary.BigEndian.Uint64(b[1:])
}

// message is one line on a control stream. Exactly one field is set.
type message struct {
	// client -> init
	Start  *startRequest `json:"start,omitempty"`
	Signal int           `json:"signal,omitempty"`
	Resize *windowSize   `json:"resize,omitempty"`
	// OutputEnd names an output ("stdout" or "stderr") of a process with
	// direct stdio whose pipe the client read to its end.
	OutputEnd string `json:"outputEnd,omitempty"`

	// init -> client
	Started     *startedReply `json:"started,omitempty"`
	Error       *errorReply   `json:"error,omitempty"`
	Exit        *exitReply    `json:"exit,omitempty"`
	Output      *outputReply  `json:"output,omitempty"`
	StdinClosed bool          `json:"stdinClosed,omitempty"`
}

type startRequest struct {
	Version int
	Argv    []string
	Dir     string
	Env     []string
	Stdin   bool
	TTY     *windowSize // a terminal of this size instead of pipes
	// Direct asks for the pipes' parent ends on the stdio socket instead
	// of data streams (see direct.go).
	Direct bool
}

// windowSize is a terminal's size on the wire.
type windowSize struct {
	Rows uint16 `json:"rows"`
	Cols uint16 `json:"cols"`
}

// wireStart is startRequest on the wire. Arguments, paths and environment
// values are arbitrary bytes, not necessarily UTF-8, and encoding/json
// would replace invalid UTF-8 in a string; as []byte (base64) they arrive
// exactly.
type wireStart struct {
	Version int         `json:"v"`
	Argv    [][]byte    `json:"argv"`
	Dir     []byte      `json:"dir,omitempty"`
	Env     [][]byte    `json:"env"`
	Stdin   bool        `json:"stdin,omitempty"`
	TTY     *windowSize `json:"tty,omitempty"`
	Direct  bool        `json:"direct,omitempty"`
}

func (r *startRequest) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireStart{Version: r.Version, Argv: toBytes(r.Argv), Dir: []byte(r.Dir), Env: toBytes(r.Env), Stdin: r.Stdin, TTY: r.TTY, Direct: r.Direct})
}

func (r *startRequest) UnmarshalJSON(b []byte) error {
	var w wireStart
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = startRequest{Version: w.Version, Argv: fromBytes(w.Argv), Dir: string(w.Dir), Env: fromBytes(w.Env), Stdin: w.Stdin, TTY: w.TTY, Direct: w.Direct}
	return nil
}

func toBytes(ss []string) [][]byte {
	if ss == nil {
		return nil
	}
	bs := make([][]byte, len(ss))
	for i, s := range ss {
		bs[i] = []byte(s)
	}
	return bs
}

func fromBytes(bs [][]byte) []string {
	if bs == nil {
		return nil
	}
	ss := make([]string, len(bs))
	for i, b := range bs {
		ss[i] = string(b)
	}
	return ss
}

type startedReply struct {
	Pid int `json:"pid"`
}

type errorReply struct {
	Kind string `json:"kind"`
	Msg  string `json:"msg"`
}

type exitReply struct {
	Code   int `json:"code"`
	Signal int `json:"signal,omitempty"`
}

// outputReply reports that the init has forwarded all of a stream:
// Stream is "stdout" or "stderr", N the total number of bytes.
type outputReply struct {
	Stream string `json:"stream"`
	N      int64  `json:"n"`
}

// WarmCodec builds encoding/json's caches of the control messages, a
// start request and every reply, by writing and reading one of each. The
// first Start would otherwise build them on its way, 0.1-0.2 ms on the
// critical path of a world's first process; a driver calls this where it
// has time to spare.
func WarmCodec() error {
	var buf bytes.Buffer
	var m message
	for _, w := range []struct {
		m   *message
		max int
	}{
		{&message{Start: &startRequest{Version: protoVersion, Argv: []string{""}, Env: []string{""}, TTY: &windowSize{}}}, maxRequestLine},
		{&message{Started: &startedReply{}, Error: &errorReply{}, Exit: &exitReply{}, Output: &outputReply{}}, maxReplyLine},
	} {
		buf.Reset()
		if err := writeMessage(&buf, w.m); err != nil {
			return err
		}
		if err := readMessage(bufio.NewReader(&buf), w.max, &m); err != nil {
			return err
		}
	}
	return nil
}

// writeMessage writes m as one line in a single Write, so concurrent
// writers on one yamux stream never interleave (Stream.Write holds the
// stream's send lock for the whole buffer).
func writeMessage(w io.Writer, m *message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

var errLineTooLong = errors.New("control message too long")

// readMessage reads one line of at most max bytes into m.
func readMessage(r *bufio.Reader, max int, m *message) error {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return errLineTooLong
		}
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(line) > 0 {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		break
	}
	*m = message{}
	if err := json.Unmarshal(line, m); err != nil {
		return fmt.Errorf("decoding control message: %w", err)
	}
	return nil
}
