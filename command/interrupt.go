package command

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Interrupt reports the signal the user sent to interrupt a call, once they
// have. It is safe for concurrent use.
type Interrupt func() (syscall.Signal, bool)

// Interrupted is the error of a call a signal interrupted: a command running
// then got the same signal, and the call's exit status is 128+Signal (130 for
// SIGINT, 143 for SIGTERM).
type Interrupted struct{ Signal syscall.Signal }

func (e *Interrupted) Error() string { return fmt.Sprintf("interrupted by signal %d", int(e.Signal)) }

// NotifyInterrupt returns a context that SIGINT or SIGTERM cancels, the
// Interrupt that says which of them came, and stop, which stops listening and
// cancels the context. Signals are the process's: a program running calls for
// several users decides itself what a signal interrupts, and passes each
// call its own Interrupt.
func NotifyInterrupt(parent context.Context) (ctx context.Context, sig Interrupt, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	var mu sync.Mutex
	var got syscall.Signal
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			mu.Lock()
			got = s.(syscall.Signal)
			mu.Unlock()
			cancel()
		case <-done:
		}
	}()
	sig = func() (syscall.Signal, bool) {
		mu.Lock()
		defer mu.Unlock()
		return got, got != 0
	}
	stop = func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
	return ctx, sig, stop
}
