package serve

import (
	"testing"
	"time"
)

// The settler's rule, over verdicts heard at given times: a new verdict
// applies once it has held for settle with nothing contradicting it.
func TestSettlerAppliesAVerdictOnceItHeld(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	down, up := verdict{up: false, reason: "offline"}, verdict{up: true, reason: "online"}

	t.Run("the first verdict waits for settle", func(t *testing.T) {
		s := settler{settle: 2 * time.Second}
		if now, due := s.heard(down, at(0)); now || !due.Equal(at(2000)) {
			t.Fatalf("heard = %v, %v; want due at +2s", now, due)
		}
		if _, ok := s.due(at(1999)); ok {
			t.Fatal("due before it held for settle")
		}
		if v, ok := s.due(at(2000)); !ok || v != down {
			t.Fatalf("due at +2s = %v, %v; want the down verdict", v, ok)
		}
		if _, ok := s.due(at(5000)); ok {
			t.Fatal("due twice")
		}
	})
	t.Run("a flapping topic applies nothing until it stops, then the verdict it stopped at", func(t *testing.T) {
		s := settler{settle: 2 * time.Second}
		s.applied(up)
		var due time.Time
		for i := range 250 { // 250 flaps in 4 s
			v := down
			if i%2 == 1 {
				v = up
			}
			now, d := s.heard(v, at(i*16))
			if now {
				t.Fatalf("flap %d applied at once", i)
			}
			due = d
			if _, ok := s.due(at(i*16 + 15)); ok {
				t.Fatalf("a verdict was due during the flapping, at flap %d", i)
			}
		}
		// The last message (249, odd) said up, as applied: nothing waits.
		if !due.IsZero() {
			t.Fatalf("after flapping back to the applied verdict, %v is due", due)
		}
		if _, d := s.heard(down, at(4100)); !d.Equal(at(6100)) {
			t.Fatalf("down after the flapping is due at %v, want +6.1s", d)
		}
		if v, ok := s.due(at(6100)); !ok || v.reason != "offline" {
			t.Fatalf("due = %v, %v", v, ok)
		}
	})
	t.Run("a repeated verdict keeps its start and the latest reason", func(t *testing.T) {
		s := settler{settle: time.Second}
		s.heard(down, at(0))
		later := verdict{up: false, reason: "offline again"}
		if _, d := s.heard(later, at(900)); !d.Equal(at(1000)) {
			t.Fatalf("due %v, want +1s: the verdict held since 0", d)
		}
		if v, _ := s.due(at(1000)); v.reason != "offline again" {
			t.Fatalf("reason %q", v.reason)
		}
	})
	t.Run("settle 0 applies each change at once and nothing equal", func(t *testing.T) {
		s := settler{}
		if now, _ := s.heard(down, at(0)); !now {
			t.Fatal("the first verdict waits")
		}
		s.applied(down)
		if now, _ := s.heard(down, at(1)); now {
			t.Fatal("the same verdict applied again")
		}
		if now, _ := s.heard(up, at(2)); !now {
			t.Fatal("a change waits")
		}
	})
	t.Run("a verdict not stored is taken as new", func(t *testing.T) {
		s := settler{}
		s.applied(down)
		s.forget()
		if now, _ := s.heard(down, at(0)); !now {
			t.Fatal("after a failed store, the same verdict is not tried again")
		}
	})
}
