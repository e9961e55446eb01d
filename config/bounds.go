package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Bounds on what a config may make fusebox read. A home's config and its
// secrets are a few kilobytes; these leave room for any real one while a
// damaged or hostile input (a FIFO, /dev/zero, a gigabyte, brackets nested
// 40,000 deep) is refused before it costs memory or blocks.
const (
	MaxConfigSize  = 4 << 20 // the config file
	MaxFileValue   = 1 << 20 // a ${file:} value, and secrets.yaml
	MaxYAMLNesting = 100     // collections within collections
)

// ReadRegularFile reads the regular file at path, refusing anything else (a
// FIFO, a device, a directory) without blocking on it, and any file longer
// than limit bytes without reading it.
func ReadRegularFile(path string, limit int64) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO for reading would wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("not a regular file (%s)", fileKind(st.Mode()))}
	}
	if st.Size() > limit {
		return nil, &os.PathError{Op: "read", Path: path, Err: &TooLargeError{Size: st.Size(), Limit: limit}}
	}
	// The one byte more finds a file that grew while read.
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	if int64(len(data)) > limit {
		return nil, &os.PathError{Op: "read", Path: path, Err: &TooLargeError{Size: int64(len(data)), Limit: limit}}
	}
	return data, nil
}

// TooLargeError is a file longer than fusebox reads.
type TooLargeError struct{ Size, Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%d bytes, more than the %d read", e.Size, e.Limit)
}

// ErrTooDeep is YAML whose collections nest deeper than MaxYAMLNesting.
var ErrTooDeep = errors.New("nested too deep")

// fileKind names the type of a file that is not a regular one.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return fmt.Sprintf("file type %v", m.Type())
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
