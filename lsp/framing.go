package lsp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Framing limits.
const (
	// MaxHeaderBytes bounds the header block of one message.
	MaxHeaderBytes = 64 << 10
	// DefaultMaxMessageBytes bounds the body of one message.
	DefaultMaxMessageBytes = 16_000_000
)

// errFraming is the cause of every framing failure.
var errFraming = errors.New("lsp: framing error")

// frameReader reads Content-Length framed messages.
type frameReader struct {
	r       *bufio.Reader
	maxBody int
}

func newFrameReader(r io.Reader, maxBody int) *frameReader {
	if maxBody <= 0 {
		maxBody = DefaultMaxMessageBytes
	}
	return &frameReader{r: bufio.NewReaderSize(r, 32<<10), maxBody: maxBody}
}

// read returns the body of the next message. Header names are matched
// case-insensitively; headers other than Content-Length are ignored. A
// header block over MaxHeaderBytes, a missing, repeated or invalid
// Content-Length and a body over the limit are framing errors: nothing
// after them can be trusted, so the connection ends.
func (f *frameReader) read() ([]byte, error) {
	length, seen, total := -1, false, 0
	for {
		line, err := f.readLine(MaxHeaderBytes - total)
		if err != nil {
			if errors.Is(err, io.EOF) && total == 0 && len(line) == 0 {
				return nil, io.EOF
			}
			return nil, err
		}
		total += len(line) + 1
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			if total == 2 || total == 1 {
				// Blank lines between messages are tolerated.
				total = 0
				continue
			}
			break
		}
		name, value, ok := strings.Cut(string(line), ":")
		if !ok {
			return nil, fmt.Errorf("%w: header line %q has no colon", errFraming, trimForError(line))
		}
		if !strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			continue
		}
		if seen {
			return nil, fmt.Errorf("%w: Content-Length given twice", errFraming)
		}
		seen = true
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%w: invalid Content-Length %q", errFraming, trimForError([]byte(value)))
		}
		length = n
	}
	if !seen {
		return nil, fmt.Errorf("%w: message without a Content-Length header", errFraming)
	}
	if length > f.maxBody {
		return nil, fmt.Errorf("%w: message of %d bytes is over the %d-byte limit", errFraming, length, f.maxBody)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(f.r, body); err != nil {
		return nil, fmt.Errorf("%w: message body cut short after the header: %w", errFraming, err)
	}
	return body, nil
}

// readLine reads one header line (without its \n), refusing one longer
// than budget bytes.
func (f *frameReader) readLine(budget int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := f.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > budget {
			return nil, fmt.Errorf("%w: header block over the %d-byte limit", errFraming, MaxHeaderBytes)
		}
		if err == nil {
			return line[:len(line)-1], nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(line) > 0 {
			return line, fmt.Errorf("%w: stream ended inside a header: %w", errFraming, io.ErrUnexpectedEOF)
		}
		return line, err
	}
}

// writeFrame writes body as one framed message.
func writeFrame(w io.Writer, body []byte) error {
	buf := make([]byte, 0, len(body)+32)
	buf = append(buf, "Content-Length: "...)
	buf = strconv.AppendInt(buf, int64(len(body)), 10)
	buf = append(buf, "\r\n\r\n"...)
	buf = append(buf, body...)
	_, err := w.Write(buf)
	return err
}

func trimForError(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}
