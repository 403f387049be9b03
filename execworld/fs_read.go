package execworld

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// File is the content of a file read whole.
type File struct {
	Data    []byte
	Version Version
	// Text reports whether Data is text: valid UTF-8 without NUL bytes.
	Text bool
}

// IsText reports whether b is text: valid UTF-8 with no NUL byte.
func IsText(b []byte) bool {
	return bytes.IndexByte(b, 0) < 0 && utf8.Valid(b)
}

// ReadFile reads the regular file name whole. A file over maxBytes is a
// *TooLargeError, never a truncated read; maxBytes must be positive.
func (f *FS) ReadFile(name string, maxBytes int64) (*File, error) {
	if maxBytes <= 0 {
		return nil, &PathError{Op: "read", Path: name, Err: fmt.Errorf("byte cap %d is not positive", maxBytes)}
	}
	// O_NONBLOCK: opening a FIFO must not hang; it is rejected below.
	fd, err := f.openat2(name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, &PathError{Op: "read", Path: name, Err: err}
	}
	file := os.NewFile(uintptr(fd), name)
	defer file.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &PathError{Op: "read", Path: name, Err: err}
	}
	if typeOf(st.Mode) != TypeFile {
		return nil, &PathError{Op: "read", Path: name, Err: fmt.Errorf("%w (%s)", ErrNotRegular, typeOf(st.Mode))}
	}
	// A write racing the read would pair content with the wrong version
	// and let a later WriteFile overwrite the racing write; read again
	// until the version before and after agree.
	for attempt := 0; ; attempt++ {
		if st.Size > maxBytes {
			return nil, &TooLargeError{Path: name, Size: st.Size, Limit: maxBytes}
		}
		before := versionOf(&st)
		if _, err := file.Seek(0, io.SeekStart); err != nil {
			return nil, &PathError{Op: "read", Path: name, Err: err}
		}
		// Read one byte past the cap: a file that grew after fstat is
		// caught here instead of being cut.
		data, err := io.ReadAll(io.LimitReader(file, maxBytes+1))
		if err != nil {
			return nil, &PathError{Op: "read", Path: name, Err: err}
		}
		if int64(len(data)) > maxBytes {
			return nil, &TooLargeError{Path: name, Size: int64(len(data)), Limit: maxBytes}
		}
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, &PathError{Op: "read", Path: name, Err: err}
		}
		if versionOf(&st) == before {
			return &File{Data: data, Version: before, Text: IsText(data)}, nil
		}
		if attempt == 3 {
			return nil, &PathError{Op: "read", Path: name, Err: fmt.Errorf("file kept changing while being read")}
		}
	}
}

// ReadText reads name as text. Content with a NUL byte or invalid UTF-8 is
// ErrNotText.
func (f *FS) ReadText(name string, maxBytes int64) (string, Version, error) {
	file, err := f.ReadFile(name, maxBytes)
	if err != nil {
		return "", Version{}, err
	}
	if !file.Text {
		return "", Version{}, &PathError{Op: "read", Path: name, Err: ErrNotText}
	}
	return string(file.Data), file.Version, nil
}
