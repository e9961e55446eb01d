package runner

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Interrupt reports the signal the user sent to interrupt a call, once they
// have. It is safe for concurrent use.
type Interrupt func() (syscall.Signal, bool)

// Interrupted is the error of a call a signal interrupted: a command running
// then got the same signal, and the call's exit status is 128+Signal (129 for
// SIGHUP, 130 for SIGINT, 131 for SIGQUIT, 141 for SIGPIPE, 143 for SIGTERM).
type Interrupted struct{ Signal syscall.Signal }

func (e *Interrupted) Error() string { return fmt.Sprintf("interrupted by signal %d", int(e.Signal)) }

// InterruptSignals are the signals that end a call: without them handled,
// each would end fusebox at once (Go's default action), leaving a command
// running in its own process group with no parent, and a probe lease held
// until it expired. SIGPIPE counts only when fusebox's own stdout or stderr
// is a pipe nobody reads any more (`fusebox run … | head -1`); a write to a
// closed socket raises it too, and then fails with EPIPE as any error.
var InterruptSignals = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGPIPE}

// NotifyInterrupt returns a context that any of InterruptSignals cancels, the
// Interrupt that says which came, and stop, which stops listening and
// cancels the context. Signals are the process's: a program running calls for
// several users decides itself what a signal interrupts, and passes each
// call its own Interrupt.
func NotifyInterrupt(parent context.Context) (ctx context.Context, sig Interrupt, stop func()) {
	ctx, sig, arm, stop := LazyInterrupt(parent)
	arm()
	return ctx, sig, stop
}

// LazyInterrupt is NotifyInterrupt for a call that may end before it does
// anything a signal must interrupt (fusebox call with every circuit open):
// the signals are watched from the first arm on. Installing the handlers
// costs a round trip with the runtime's signal thread for each signal
// (docs/benchmarks.md, "Figures behind bounds in the code"), that such a
// call need not pay; until arm, a signal has Go's default action. arm may be called any number of times,
// from any goroutine; after stop it does nothing.
func LazyInterrupt(parent context.Context) (ctx context.Context, sig Interrupt, arm, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	var mu sync.Mutex // guards got, armed and stopped
	var got syscall.Signal
	var armed, stopped bool
	ch := make(chan os.Signal, len(InterruptSignals))
	done := make(chan struct{})
	arm = func() {
		mu.Lock()
		defer mu.Unlock()
		if armed || stopped {
			return
		}
		armed = true
		signal.Notify(ch, InterruptSignals...)
		go func() {
			for {
				select {
				case s := <-ch:
					if s == syscall.SIGPIPE && !outputGone() {
						continue
					}
					mu.Lock()
					got = s.(syscall.Signal)
					mu.Unlock()
					cancel()
					return
				case <-done:
					return
				}
			}
		}()
	}
	sig = func() (syscall.Signal, bool) {
		mu.Lock()
		defer mu.Unlock()
		return got, got != 0
	}
	stop = func() {
		mu.Lock()
		if !stopped {
			stopped = true
			if armed {
				signal.Stop(ch)
				close(done)
			}
		}
		mu.Unlock()
		cancel()
	}
	return ctx, sig, arm, stop
}

// outputGone reports whether fusebox's stdout or stderr can no longer be
// written: a pipe whose reader has gone (POLLERR), or a socket or terminal
// hung up.
func outputGone() bool {
	fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
	if n, err := unix.Poll(fds, 0); err != nil || n == 0 {
		return false
	}
	for _, fd := range fds {
		if fd.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}
