package notify_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/notify"
)

// recorder is a sink that keeps the messages it is sent.
type recorder struct {
	mu   sync.Mutex
	msgs []notify.Message
	sent int // transitions it was told of, with a message or not
}

func (r *recorder) String() string { return "recorder" }

func (r *recorder) Send(_ context.Context, _ breaker.Event, m *notify.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent++
	if m != nil {
		r.msgs = append(r.msgs, *m)
	}
	return nil
}

func (r *recorder) got() ([]notify.Message, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notify.Message(nil), r.msgs...), r.sent
}

// flapping is a circuit's log as a topic flapping every 16 ms makes it:
// open, closed, open, ... from start.
type flapping struct {
	mu     sync.Mutex
	events []breaker.Event
}

func (f *flapping) add(e breaker.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
}

func (f *flapping) read(_ context.Context, _ string, since time.Time) ([]breaker.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []breaker.Event
	for _, e := range f.events {
		if !e.Time.Before(since) {
			out = append(out, e)
		}
	}
	return out, nil
}

// flapSender sends to a recorder, reading the outage from a log the test
// writes.
func flapSender() (*notify.Sender, *recorder, *flapping) {
	rec, log := &recorder{}, &flapping{}
	s := notify.NewSender(func(string) notify.Rules { return notify.Rules{} }, log.read,
		notify.WithSink(func(string, notify.Rules) notify.Sink { return rec }))
	return s, rec, log
}

// flap has s hear 250 transitions of bridge, 16 ms apart from start,
// through deliver.
func flap(log *flapping, start time.Time, deliver func(breaker.Event)) {
	since := start
	for i := range 250 {
		now := start.Add(time.Duration(i) * 16 * time.Millisecond)
		e := breaker.Event{Time: now, Circuit: "bridge", Kind: breaker.EventTransition, Since: since}
		if i%2 == 0 {
			since = now
			e.Since, e.From, e.To, e.Reason = now, breaker.Closed, breaker.Open, "offline"
			log.add(breaker.Event{Time: now, Circuit: "bridge", Kind: breaker.EventFailure, Reason: "offline"})
		} else {
			e.From, e.To, e.Reason = breaker.Open, breaker.Closed, "online"
		}
		log.add(e)
		deliver(e)
	}
}

// 250 changes in 4 s send five messages, then one saying the circuit
// flaps, then nothing (the sink still hears every transition, for the
// state it publishes), and, once it has been quiet for a while, one saying
// how it settled: seven in all.
func TestAFlappingCircuitSendsASummary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec, log := flapSender()
		flap(log, time.Now(), func(e breaker.Event) { s.Deliver(context.Background(), e) })
		msgs, sent := rec.got()
		if sent != 250 {
			t.Errorf("the sink heard %d transitions, want all 250", sent)
		}
		if len(msgs) != 6 || msgs[5].Kind != notify.Flapping {
			t.Fatalf("while flapping: %d messages, want 5 and one saying it flaps: %+v", len(msgs), msgs)
		}
		if f := msgs[5]; f.Changes != 6 || !strings.Contains(f.Text(), "bridge is flapping: 6 changes in") {
			t.Errorf("the flapping message: %d changes, %q", f.Changes, f.Text())
		}
		time.Sleep(5*time.Minute + time.Second)
		synctest.Wait()
		msgs, _ = rec.got()
		if len(msgs) != 7 {
			t.Fatalf("after the flapping: %d messages, want 7: %+v", len(msgs), msgs)
		}
		end := msgs[6]
		if end.Kind != notify.Settled || !end.Back || end.Changes != 250 || end.Title() != "bridge settled: back" {
			t.Errorf("the settled message = %+v (%s), want it back after 250 changes", end, end.Title())
		}
		if !strings.Contains(end.Text(), "settled up after 250 changes in 4s") {
			t.Errorf("settled text %q", end.Text())
		}
		if env := strings.Join(notify.Env(end), "\n"); !strings.Contains(env, "FUSEBOX_EVENT=settled") || !strings.Contains(env, "FUSEBOX_CHANGES=250") {
			t.Errorf("the settled message's environment:\n%s", env)
		}
	})
}

// A circuit that changes now and then (five messages in ten minutes at
// most) is told of each change, as ever.
func TestACircuitChangingNowAndThenIsToldOfEachChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec, log := flapSender()
		start := time.Now()
		for i := range 40 {
			now := start.Add(time.Duration(i) * 2 * time.Minute) // one message every 2 min: five in ten
			e := breaker.Event{Time: now, Circuit: "bridge", Kind: breaker.EventTransition, Since: now, From: breaker.Closed, To: breaker.Open, Reason: "offline"}
			if i%2 == 1 {
				e.Since, e.From, e.To, e.Reason = now.Add(-2*time.Minute), breaker.Open, breaker.Closed, "online"
			}
			log.add(e)
			s.Deliver(context.Background(), e)
		}
		if msgs, _ := rec.got(); len(msgs) != 40 {
			t.Errorf("%d messages for 40 changes two minutes apart, want 40", len(msgs))
		}
	})
}

// Through a Queue (the daemon's), the message that ends a flapping goes
// out in the circuit's lane, and Close waits for it as for the rest.
func TestAQueuedFlappingSettlesInItsLane(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec, log := flapSender()
		q := notify.NewQueue(s, 0)
		flap(log, time.Now(), q.Listen)
		time.Sleep(5*time.Minute + time.Second)
		if dropped := q.Close(context.Background()); dropped != 0 {
			t.Errorf("%d notifications dropped", dropped)
		}
		msgs, sent := rec.got()
		if sent != 251 || len(msgs) != 7 || msgs[5].Kind != notify.Flapping || msgs[6].Kind != notify.Settled {
			t.Fatalf("%d deliveries, messages %+v: want 250 transitions and the settling, 5 messages, flapping, settled", sent, msgs)
		}
	})
}

// A press that changes no phase (a reset pressed on a closed circuit, a
// trip pressed on a tripped one, every 4 minutes) is no flap: it neither
// holds a flapping open nor gives the settling its reason, so the
// flapping settles 5 minutes after its last real change, and the real
// outage after it is told. Before, each press restarted the 5 minutes: the
// circuit never settled, the outage was never told, and the last reason
// read "reset by MQTT".
func TestPressesThatChangeNothingAreNoFlaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, rec, log := flapSender()
		flap(log, time.Now(), func(e breaker.Event) { s.Deliver(context.Background(), e) })
		for i, p := range []struct {
			phase  breaker.Phase
			reason string
		}{{breaker.Closed, "reset by MQTT"}, {breaker.Closed, "reset by MQTT"}, {breaker.ForcedOpen, "tripped by MQTT for 1h"}} {
			time.Sleep(4 * time.Minute)
			if p.phase == breaker.ForcedOpen { // a real trip, then presses that extend it
				now := time.Now()
				e := breaker.Event{Time: now, Circuit: "bridge", Kind: breaker.EventTransition, From: breaker.Closed, To: breaker.ForcedOpen, Reason: p.reason}
				log.add(e)
				s.Deliver(context.Background(), e)
				for range 4 {
					time.Sleep(4 * time.Minute)
					e := breaker.Event{Time: time.Now(), Circuit: "bridge", Kind: breaker.EventTransition, From: breaker.ForcedOpen, To: breaker.ForcedOpen, Reason: p.reason}
					log.add(e)
					s.Deliver(context.Background(), e)
				}
				break
			}
			e := breaker.Event{Time: time.Now(), Circuit: "bridge", Kind: breaker.EventTransition, From: p.phase, To: p.phase, Reason: p.reason}
			log.add(e)
			s.Deliver(context.Background(), e)
			if i == 1 {
				synctest.Wait()
				msgs, _ := rec.got()
				if len(msgs) != 7 || msgs[6].Kind != notify.Settled || !msgs[6].Back || msgs[6].Reason != "online" {
					t.Fatalf("8 minutes after the last real change, with a press every 4: %+v; want it settled up, on its last real change", msgs)
				}
			}
		}
		// The real outage: told.
		now := time.Now()
		e := breaker.Event{Time: now, Circuit: "bridge", Kind: breaker.EventTransition, From: breaker.Closed, To: breaker.Open, Since: now, Reason: "offline"}
		log.add(e)
		s.Deliver(context.Background(), e)
		synctest.Wait()
		msgs, _ := rec.got()
		if last := msgs[len(msgs)-1]; last.Kind != notify.Opened || last.Reason != "offline" {
			t.Errorf("the real outage after the presses: last message %+v, want it told as opened", last)
		}
	})
}
