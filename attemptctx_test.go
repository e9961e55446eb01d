package fusebox

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestLazyDeadlineBehavesAsAContextWithDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		deadline := time.Now().Add(5 * time.Second)
		a := newAttemptCtx(context.Background(), deadline)
		if a.lazy == nil {
			t.Fatal("a Background parent did not get the lazy context")
		}
		if d, ok := a.Deadline(); !ok || !d.Equal(deadline) {
			t.Errorf("Deadline = %v, %v", d, ok)
		}
		if a.Err() != nil {
			t.Fatalf("Err before the deadline = %v", a.Err())
		}
		done := a.Done()
		select {
		case <-done:
			t.Fatal("Done closed before the deadline")
		default:
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("Done not closed at the deadline")
		}
		if !errors.Is(a.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(a), context.DeadlineExceeded) {
			t.Errorf("Err = %v, Cause = %v; want DeadlineExceeded", a.Err(), context.Cause(a))
		}
		a.end()
		if !errors.Is(a.Err(), context.DeadlineExceeded) {
			t.Errorf("end changed the error to %v", a.Err())
		}
	})
}

func TestLazyDeadlineWithoutDoneStillExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAttemptCtx(context.Background(), time.Now().Add(time.Second))
		time.Sleep(2 * time.Second)
		if !errors.Is(a.Err(), context.DeadlineExceeded) {
			t.Errorf("Err past the deadline, Done never asked = %v", a.Err())
		}
		select {
		case <-a.Done():
		default:
			t.Error("Done asked after the deadline is not closed")
		}
	})
}

func TestLazyDeadlineEndsOnEndAndStopsItsTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAttemptCtx(context.Background(), time.Now().Add(time.Hour))
		done := a.Done()
		child, cancel := context.WithCancel(a) // derived contexts follow it
		defer cancel()
		a.end()
		<-done
		<-child.Done()
		if !errors.Is(a.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
			t.Errorf("after end: Err = %v, child %v", a.Err(), child.Err())
		}
		synctest.Wait() // no timer or goroutine is left in the bubble
	})
}

func TestACancellableParentGetsAStandardContext(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	a := newAttemptCtx(parent, time.Now().Add(time.Hour))
	if a.lazy != nil {
		t.Fatal("a cancellable parent got the lazy context")
	}
	cancel()
	<-a.Done()
	a.end()
}

func TestLazyDeadlineIsSafeForConcurrentUse(t *testing.T) {
	a := newAttemptCtx(context.Background(), time.Now().Add(time.Millisecond))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			<-a.Done()
			_ = a.Err()
		})
	}
	wg.Go(func() { _ = a.Err() })
	wg.Wait()
	a.end()
}

// A goroutine the attempt started may ask for Done only after the attempt
// ended, or while it ends: either way it gets a closed channel and Canceled.
func TestLazyDeadlineDoneAskedAsOrAfterItEnds(t *testing.T) {
	for range 200 {
		a := newAttemptCtx(context.Background(), time.Now().Add(time.Hour))
		var wg sync.WaitGroup
		wg.Go(func() { <-a.Done() })
		a.end()
		wg.Wait()
		<-a.Done()
		if !errors.Is(a.Err(), context.Canceled) {
			t.Fatalf("Err after end = %v, want Canceled", a.Err())
		}
	}
}
