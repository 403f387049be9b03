package pid1

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

func TestReadMessageCap(t *testing.T) {
	long := `{"error":{"kind":"failed","msg":"` + strings.Repeat("x", 100) + `"}}` + "\n"
	var m message
	if err := readMessage(bufio.NewReaderSize(strings.NewReader(long), 16), 64, &m); err != errLineTooLong {
		t.Errorf("readMessage of a %d-byte line with cap 64: %v, want errLineTooLong", len(long), err)
	}
	if err := readMessage(bufio.NewReaderSize(strings.NewReader(long), 16), len(long), &m); err != nil || m.Error == nil {
		t.Errorf("readMessage of a %d-byte line with cap %d: %v, %+v", len(long), len(long), err, m)
	}
}

func TestMessageRoundTrip(t *testing.T) {
	in := []*message{
		{Start: &startRequest{Version: protoVersion, Argv: []string{"a", "b\nc"}, Dir: "/w", Env: []string{"X=\x01"}, Stdin: true}},
		{Signal: 15},
		{Exit: &exitReply{Code: -1, Signal: 9}},
		{Output: &outputReply{Stream: "stdout", N: 1 << 40}},
		{StdinClosed: true},
	}
	var buf bytes.Buffer
	for _, m := range in {
		if err := writeMessage(&buf, m); err != nil {
			t.Fatal(err)
		}
	}
	r := bufio.NewReader(&buf)
	for i, want := range in {
		var got message
		if err := readMessage(r, maxRequestLine, &got); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		a, _ := marshalLine(&got)
		b, _ := marshalLine(want)
		if !bytes.Equal(a, b) {
			t.Errorf("message %d: got %s, want %s", i, a, b)
		}
	}
}

// FuzzReadMessage feeds the client's reader what an untrusted init could
// send: it must return an error or a message, never panic or exceed its
// cap.
func FuzzReadMessage(f *testing.F) {
	f.Add([]byte(`{"started":{"pid":3}}` + "\n"))
	f.Add([]byte(`{"exit":{"code":1,"signal":9}}` + "\n" + `{"output":{"stream":"stdout","n":-1}}`))
	f.Add([]byte("\n\n{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReaderSize(bytes.NewReader(b), 16)
		for range 8 {
			var m message
			if err := readMessage(r, 256, &m); err != nil {
				return
			}
		}
	})
}

// WarmCodec's messages are ones the protocol carries: each it writes, it
// reads back, so the caches it builds are those a world's first Start
// uses.
func TestWarmCodecRoundTrips(t *testing.T) {
	if err := WarmCodec(); err != nil {
		t.Fatalf("WarmCodec: %v", err)
	}
}
