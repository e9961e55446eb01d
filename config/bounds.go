package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
)

// Bounds on what a config may make fusebox read. A home's config and its
// secrets are a few kilobytes; these leave room for any real one while a
// damaged or hostile input (a FIFO, /dev/zero, a gigabyte, brackets nested
// 40,000 deep) is refused before it costs memory or blocks.
const (
	MaxConfigSize  = 4 << 20 // the config file and secrets.yaml
	MaxFileValue   = 1 << 20 // a ${file:} value
	MaxYAMLNesting = 100     // collections within collections
)

// ReadRegularFile reads the regular file at path, refusing anything else (a
// FIFO, a device, a directory) without blocking on it, and any file longer
// than limit bytes without reading it.
//
// It reads with plain system calls, not an os.File: the first os.File a
// process opens sets up the runtime's poller (an epoll instance, an eventfd
// and its registration), about 40 µs of a fail-fast run that otherwise
// opens nothing that way.
func ReadRegularFile(path string, limit int64) ([]byte, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := retryEINTR(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFREG {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("not a regular file (%s)", fileKind(uint32(kind)))}
	}
	if st.Size > limit {
		return nil, &os.PathError{Op: "read", Path: path, Err: &TooLargeError{Size: st.Size, Limit: limit}}
	}
	data := make([]byte, 0, st.Size+1) // the one byte more finds a file that grew
	for int64(len(data)) <= limit {
		if len(data) == cap(data) {
			data = slices.Grow(data, min(cap(data), int(limit+1)-len(data)))
		}
		var n int
		err := retryEINTR(func() (err error) {
			n, err = syscall.Read(fd, data[len(data):min(cap(data), int(limit+1))])
			return err
		})
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return data, nil
		}
		data = data[:len(data)+n]
	}
	// It grew while read.
	return nil, &os.PathError{Op: "read", Path: path, Err: &TooLargeError{Size: int64(len(data)), Limit: limit}}
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}

// TooLargeError is a file longer than fusebox reads.
type TooLargeError struct{ Size, Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%d bytes, more than the %d read", e.Size, e.Limit)
}

// ErrTooDeep is YAML whose collections nest deeper than MaxYAMLNesting.
var ErrTooDeep = errors.New("nested too deep")

// fileKind names a file type of stat's st_mode (S_IFMT bits).
func fileKind(kind uint32) string {
	switch kind {
	case syscall.S_IFIFO:
		return "a FIFO"
	case syscall.S_IFCHR, syscall.S_IFBLK:
		return "a device"
	case syscall.S_IFSOCK:
		return "a socket"
	case syscall.S_IFDIR:
		return "a directory"
	}
	return fmt.Sprintf("file type %#o", kind)
}

// yamlNesting returns the deepest nesting of collections in YAML text, as
// far as it can tell without parsing it, and the line where it passed max
// (0 if it never did): flow brackets outside quotes and comments, block
// indentation, and "- " entries opening a sequence on the same line. It
// runs before the parser, whose memory grows without bound with depth.
func yamlNesting(data []byte, max int) (depth, line int) {
	flow := 0
	var indents []int
	lineNo := 1
	atLineStart := true
	col := 0
	for i := 0; i < len(data); i++ {
		c := data[i]
		if atLineStart {
			// Block structure: the indentation, then any "- " or "? " entries.
			j := i
			for j < len(data) && data[j] == ' ' {
				j++
			}
			if j < len(data) && data[j] != '\n' && data[j] != '#' && flow == 0 {
				ind := j - i
				for len(indents) > 0 && indents[len(indents)-1] >= ind {
					indents = indents[:len(indents)-1]
				}
				indents = append(indents, ind)
				for j+1 < len(data) && (data[j] == '-' || data[j] == '?') && (data[j+1] == ' ') {
					j += 2
					for j < len(data) && data[j] == ' ' {
						j++
					}
					indents = append(indents, j-i)
				}
			}
			if d := len(indents) + flow; d > depth {
				depth = d
				if depth > max && line == 0 {
					line = lineNo
				}
			}
			col = j - i
			i = j - 1
			atLineStart = false
			continue
		}
		switch c {
		case '\n':
			lineNo++
			atLineStart = true
		case '#':
			if col == 0 || data[i-1] == ' ' || data[i-1] == '\t' {
				for i+1 < len(data) && data[i+1] != '\n' {
					i++
				}
			}
		case '\'', '"':
			if col > 0 && data[i-1] != ' ' && data[i-1] != '[' && data[i-1] != '{' && data[i-1] != ',' && data[i-1] != ':' {
				break // a quote inside a plain scalar
			}
			for i++; i < len(data) && data[i] != c; i++ {
				if c == '"' && data[i] == '\\' {
					i++
				}
				if i < len(data) && data[i] == '\n' {
					lineNo++
				}
			}
		case '[', '{':
			flow++
			if d := len(indents) + flow; d > depth {
				depth = d
				if depth > max && line == 0 {
					line = lineNo
				}
			}
		case ']', '}':
			flow = max0(flow - 1)
		}
		col++
	}
	return depth, line
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}
