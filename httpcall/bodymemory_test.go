package httpcall

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// A body of unknown length takes 64 KiB, then twice what it holds as it
// grows, never waiting, and past 64 KiB only while 1 MiB stays free for
// small bodies: one that does not fit fails at once, and what a body read
// did not use, then the body itself, come back. A known length is taken
// whole, before anything is read.
func TestBodiesAreReadWithinTheirShare(t *testing.T) {
	m := NewBodyMemory(3 << 20)
	body := func(n int) io.Reader { return bytes.NewReader(make([]byte, n)) }

	a, err := m.take(body(600<<10), -1, 10<<20)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(a); err != nil || len(b) != 600<<10 || a.held != 1<<20 {
		t.Fatalf("600 KiB of unknown length: read %d, %v, holding %d; want it all, holding 1 MiB", len(b), err, a.held)
	}
	a.keep(600 << 10) // read: what it did not use comes back
	b, err := m.take(body(1536<<10), -1, 10<<20)
	if err != nil {
		t.Fatalf("64 KiB to start with: %v", err)
	}
	if _, err := io.ReadAll(b); !errors.Is(err, ErrNoBodyMemory) || b.held != 1<<20 {
		t.Fatalf("1.5 MiB while 600 KiB are held: %v, holding %d; want it refused at 1 MiB, the next 1 MiB eating into what small bodies keep", err, b.held)
	}
	b.giveBack()
	c, err := m.take(body(300<<10), 300<<10, 10<<20)
	if err != nil || c.held != 300<<10 {
		t.Fatalf("300 KiB said, 2.1 MiB free: %v, holding %d", err, c.held)
	}
	if _, err := m.take(body(1200<<10), 1200<<10, 10<<20); !errors.Is(err, ErrNoBodyMemory) {
		t.Fatalf("1.2 MiB said, 2.1 MiB free: %v, want it refused before it is read, leaving 1 MiB to small bodies", err)
	}
	small, err := m.take(body(10<<10), 10<<10, 10<<20)
	if err != nil {
		t.Fatalf("a 10 KiB answer beside them: %v", err)
	}
	for _, s := range []*bodyShare{a, c, small} {
		s.giveBack()
	}
	if !m.sem.TryAcquire(3 << 20) {
		t.Fatal("everything given back, the whole bound is not free")
	}
}

// ReadAll, which the daemon reads its callers' bodies with, counts a body
// as an upstream's is: a known length whole before reading, held until
// release; one that does not fit is refused unread; a body of unknown
// length is read to its limit and a byte.
func TestReadAllHoldsTheBodyUntilReleased(t *testing.T) {
	m := NewBodyMemory(3 << 20)
	body := func(n int) io.Reader { return bytes.NewReader(make([]byte, n)) }
	a, release, err := m.ReadAll(body(1<<20), 1<<20, 1<<20)
	if err != nil || len(a) != 1<<20 {
		t.Fatalf("1 MiB of a known length: %d bytes, %v", len(a), err)
	}
	if _, _, err := m.ReadAll(body(1200<<10), 1200<<10, 2<<20); !errors.Is(err, ErrNoBodyMemory) {
		t.Errorf("1200 KiB with 1 MiB held of 3: %v, want ErrNoBodyMemory", err)
	}
	release()
	if _, release, err := m.ReadAll(body(1200<<10), 1200<<10, 2<<20); err != nil {
		t.Errorf("1200 KiB once the first was released: %v", err)
	} else {
		release()
	}
	if b, release, err := m.ReadAll(body(5<<20), -1, 1<<20); err != nil || len(b) != 1<<20+1 {
		t.Errorf("5 MiB of unknown length, limit 1 MiB: %d bytes, %v; want the limit and a byte", len(b), err)
	} else {
		release()
	}
	if !m.sem.TryAcquire(3 << 20) {
		t.Error("the budget is not whole after every body was released")
	}
}
