package runner

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// proc is a started attempt: a child in its own process group, and the
// goroutines copying its pipes. It is what os/exec's Cmd does for fusebox,
// with a drain that silence ends (see wait) rather than Cmd's fixed
// WaitDelay. The group is signalled with kill(2) on -pid; the process's
// pidfd would only guard the signal to the child itself.
type proc struct {
	process *os.Process
	parent  []*os.File     // fusebox's ends of the pipes: closed when the drain runs out
	copies  sync.WaitGroup // one per pipe
	read    atomic.Int64   // bytes read from the child's stdout and stderr: the drain's progress
	mu      sync.Mutex
	ioErr   error // the first error copying a pipe
}

// progressReader counts what is read through it into n.
type progressReader struct {
	r io.Reader
	n *atomic.Int64
}

func (r progressReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.n.Add(int64(n))
	return n, err
}

// startProc starts argv (argv[0] looked up in $PATH unless it holds a
// slash, as exec.Command does) in a process group of its own. A nil stdin
// reads /dev/null and a nil stdout discards; an *os.File is handed to the
// child as it is, anything else is fed through a pipe.
func startProc(argv []string, stdin io.Reader, stdout, stderr io.Writer) (*proc, error) {
	path := argv[0]
	if filepath.Base(path) == path {
		lp, err := exec.LookPath(path)
		if err != nil {
			return nil, err // an *exec.Error: not found, or found only in "."
		}
		path = lp
	}
	p := &proc{}
	var child []*os.File // the child's ends, closed once it has them
	defer func() {
		for _, f := range child {
			f.Close()
		}
	}()
	fail := func(err error) (*proc, error) {
		p.closePipes()
		p.copies.Wait()
		return nil, err
	}
	in, err := p.reader(stdin, &child)
	if err != nil {
		return fail(err)
	}
	out, err := p.writer(stdout, &child)
	if err != nil {
		return fail(err)
	}
	errf, err := p.writer(stderr, &child)
	if err != nil {
		return fail(err)
	}
	process, err := os.StartProcess(path, argv, &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{in, out, errf},
		Sys:   procAttr(),
	})
	if err != nil {
		return fail(err)
	}
	p.process = process
	return p, nil
}

// reader is the child's stdin for r.
func (p *proc) reader(r io.Reader, child *[]*os.File) (*os.File, error) {
	if r == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		*child = append(*child, f)
		return f, nil
	}
	if f, ok := r.(*os.File); ok {
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	*child = append(*child, pr)
	p.parent = append(p.parent, pw)
	p.copy(func() error {
		_, err := io.Copy(pw, r)
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, fs.ErrClosed) {
			err = nil // the command exited without reading it all
		}
		if cerr := pw.Close(); err == nil && !errors.Is(cerr, fs.ErrClosed) {
			err = cerr
		}
		return err
	})
	return pr, nil
}

// writer is the child's stdout or stderr for w.
func (p *proc) writer(w io.Writer, child *[]*os.File) (*os.File, error) {
	if w == nil {
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		*child = append(*child, f)
		return f, nil
	}
	if f, ok := w.(*os.File); ok {
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	*child = append(*child, pw)
	p.parent = append(p.parent, pr)
	p.copy(func() error {
		_, err := io.Copy(w, progressReader{pr, &p.read})
		pr.Close() // a write error: the command gets EPIPE rather than a full pipe
		return err
	})
	return pw, nil
}

func (p *proc) copy(f func() error) {
	p.copies.Go(func() {
		if err := f(); err != nil {
			p.mu.Lock()
			if p.ioErr == nil {
				p.ioErr = err
			}
			p.mu.Unlock()
		}
	})
}

func (p *proc) closePipes() {
	for _, f := range p.parent {
		f.Close()
	}
}

// wait reaps the child, then reads its pipes until EOF, or until they have
// been silent for drain, or for at most maxDrain: a background job it
// started may hold them open for hours, and its later output is cut off.
// Silence, not a fixed time, ends the drain, so that what the command
// wrote before it exited is read whole on a machine too busy to read it
// in one drain. reaped is false when the child could not be
// waited for (err says why); else err is the first error copying its pipes
// (none when the drain ran out).
func (p *proc) wait(drain time.Duration) (ws syscall.WaitStatus, reaped bool, err error) {
	state, err := p.process.Wait()
	if err == nil {
		ws = state.Sys().(syscall.WaitStatus)
	}
	reaped = err == nil
	// Waited for here, with a timer to cut the drain short, rather than in a
	// goroutine racing a timer: a goroutine started wakes another thread.
	var (
		mu     sync.Mutex
		cut    *time.Timer
		closed bool
		seen   = p.read.Load()
		start  = time.Now()
	)
	mu.Lock()
	cut = time.AfterFunc(drain, func() {
		mu.Lock()
		defer mu.Unlock()
		if n := p.read.Load(); n != seen && time.Since(start) < maxDrain {
			seen = n
			cut.Reset(drain)
			return
		}
		closed = true
		p.closePipes()
	})
	mu.Unlock()
	p.copies.Wait()
	mu.Lock()
	cut.Stop()
	cutShort := closed
	mu.Unlock()
	if !cutShort && err == nil { // else the errors are those of the closing
		p.mu.Lock()
		err = p.ioErr
		p.mu.Unlock()
	}
	return ws, reaped, err
}
