package httpcall

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// The bound is taken first come first served: an evaluation that does not
// fit waits for the ones before it, gives up when its attempt ends (and
// takes nothing), and one queued behind a larger one waits its turn.
func TestJQMemoryIsTakenInTurnAndGivenUpAtTheAttemptsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewJQMemory(2 * jqMemory)
		held := func(what string, n int64) func() {
			t.Helper()
			release, err := m.acquire(context.Background(), n)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			return release
		}
		first, second := held("a first child", jqMemory), held("a second child", jqMemory)

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		gaveUp := make(chan error)
		go func() {
			_, err := m.acquire(ctx, jqMemory)
			gaveUp <- err
		}()
		synctest.Wait()
		select {
		case err := <-gaveUp:
			t.Fatalf("a third child past the bound did not wait: %v", err)
		default:
		}
		if err := <-gaveUp; err == nil || !strings.Contains(err.Error(), "no jq memory free") {
			t.Fatalf("a third child at its attempt's end: %v; want it to fail saying no jq memory was free", err)
		}

		granted, hold := make(chan string, 2), make(chan struct{})
		go func() {
			release, _ := m.acquire(context.Background(), jqInProcessMemory)
			granted <- "in-process"
			<-hold
			release()
		}()
		synctest.Wait()
		go func() {
			release, _ := m.acquire(context.Background(), jqMemory)
			granted <- "child"
			release()
		}()
		synctest.Wait()
		if len(granted) != 0 {
			t.Fatalf("%q was granted with the bound held whole", <-granted)
		}
		first()
		if got := <-granted; got != "in-process" {
			t.Fatalf("after the first child: %q granted; want the in-process evaluation that came first", got)
		}
		synctest.Wait()
		if len(granted) != 0 {
			t.Fatalf("%q was granted beside a child and the in-process evaluation", <-granted)
		}
		second()
		if got := <-granted; got != "child" {
			t.Fatalf("after the second child: %q", got)
		}
		close(hold)
		synctest.Wait()
		if m.Peak() > m.Total() || m.Waited() != 3 {
			t.Fatalf("peak %d of %d, %d waited; want at most the total, and 3 waits", m.Peak(), m.Total(), m.Waited())
		}
		if m.used != 0 {
			t.Fatalf("%d bytes still held after every evaluation ended", m.used)
		}
	})
}

func TestJQMemoryIsAtLeastOneProgramsBound(t *testing.T) {
	if got := NewJQMemory(1).Total(); got != jqMemory {
		t.Fatalf("NewJQMemory(1).Total() = %d; want it raised to one program's bound, %d", got, jqMemory)
	}
}
