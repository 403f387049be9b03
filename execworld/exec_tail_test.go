package execworld

import (
	"bytes"
	"testing"
)

// The ring must keep exactly the last max bytes for every way the stream
// can be cut into writes.
func TestTailKeepsExactlyTheLastBytes(t *testing.T) {
	stream := make([]byte, 1000)
	for i := range stream {
		stream[i] = byte('a' + i%26)
	}
	for _, max := range []int{0, 1, 7, 100, 999, 1000, 1001, 5000} {
		for _, chunk := range []int{1, 3, 6, 7, 8, 64, 99, 100, 101, 1000} {
			tl := newTail(max)
			for off := 0; off < len(stream); off += chunk {
				tl.Write(stream[off:min(off+chunk, len(stream))])
			}
			got := tl.snapshot()
			want := stream[len(stream)-min(max, len(stream)):]
			if !bytes.Equal(got.Data, want) || got.Total != 1000 || got.Truncated != (max < 1000) {
				t.Errorf("max %d chunk %d: got %d bytes (total %d, truncated %v), want the last %d", max, chunk, len(got.Data), got.Total, got.Truncated, len(want))
			}
		}
	}
}

func TestMergeEnv(t *testing.T) {
	got, err := mergeEnv([]string{"PATH=/bin", "HOME=/w", "LANG=C"}, nil, []string{"HOME=/x", "NEW=1", "HOME=/y"})
	if err != nil {
		t.Fatal(err)
	}
	want := "PATH=/bin HOME=/y LANG=C NEW=1"
	if s := join(got); s != want {
		t.Fatalf("mergeEnv = %q, want %q", s, want)
	}
	for _, bad := range []string{"NOEQUALS", "=v", "K=a\x00b"} {
		if _, err := mergeEnv(nil, nil, []string{bad}); err == nil {
			t.Errorf("mergeEnv(%q) succeeded; want an error", bad)
		}
	}
}

func join(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x)
	}
	return b.String()
}
