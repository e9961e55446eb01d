package serve

import (
	"context"
	"fmt"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/httpcall"
	"github.com/fusebox-hq/fusebox/notify"
)

// watch is one circuit's health: mqtt: block, its condition compiled.
type watch struct {
	cfg    notify.Watch
	up     *httpcall.Condition
	policy breaker.Policy
}

func compileWatches(ws []notify.Watch) ([]watch, error) {
	var out []watch
	for _, w := range ws {
		up, err := httpcall.NewCondition(w.Up)
		if err != nil {
			return nil, fmt.Errorf("%s: health.mqtt.up: %w", w.Circuit, err)
		}
		out = append(out, watch{cfg: w, up: up, policy: w.Policy.WithDefaults().Breaker})
	}
	return out, nil
}

// watchMQTT subscribes to the watch's topic and has each verdict that
// differs from the last one applied (the first one heard included, the
// retained message at connect, say) open or close the circuit in the
// store, once it has held for the watch's settle period (see settler),
// until ctx ends. A lost broker connection leaves the circuit as the last
// verdict left it. While the verdict is down, the open period is renewed
// before it ends, so that runs keep skipping.
func (s *Server) watchMQTT(ctx context.Context, w *world, wt watch) {
	msgs := make(chan []byte, 1) // the latest message not judged yet
	stop, err := s.o.Subscribe(wt.cfg, func(p []byte) {
		for {
			select {
			case msgs <- p:
				return
			default:
				select { // a newer message wins over one not judged yet
				case <-msgs:
				default:
				}
			}
		}
	})
	if err != nil {
		s.log.Error("health: cannot watch "+wt.cfg.Topic+": "+err.Error(), "circuit", wt.cfg.Circuit)
		return
	}
	defer stop()
	var (
		st       = settler{settle: wt.cfg.Settle}
		cur      verdict // the one applied, or to apply
		renew    = newWatchTimer()
		settling = newWatchTimer()
	)
	defer renew.stop()
	defer settling.stop()
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-msgs:
			up, reason := s.judge(ctx, wt, p)
			now, at := st.heard(verdict{up: up, reason: reason}, time.Now())
			if !now {
				settling.at(at)
				continue
			}
			settling.at(time.Time{})
			cur = verdict{up: up, reason: reason}
		case t := <-settling.c():
			settling.fired()
			v, ok := st.due(t)
			if !ok {
				continue
			}
			cur = v
		case <-renew.c():
			renew.fired()
		}
		renew.at(time.Time{})
		v, _, err := w.health.Circuits().Watched(ctx, wt.cfg.Circuit, wt.policy, cur.up, cur.reason)
		if err != nil {
			s.log.Warn("health: the verdict of "+wt.cfg.Topic+" is not stored; the next message tries again", "circuit", wt.cfg.Circuit, "err", err)
			st.forget()
			continue
		}
		st.applied(cur)
		if !cur.up && v.Phase == breaker.Open && v.ReopensIn > 0 {
			// Watched renews the period once less than a quarter is left.
			d := max(v.ReopensIn-max(wt.policy.OpenMax, wt.policy.OpenFor)/4+time.Millisecond, time.Millisecond)
			renew.at(time.Now().Add(d))
		}
	}
}

// verdict is what a watch made of one message.
type verdict struct {
	up     bool
	reason string
}

// settler holds a watch's verdicts back until one has held, no message
// contradicting it, for settle: a topic flapping faster than that changes
// nothing until it stops, and then the verdict it stopped at applies,
// once. A verdict equal to the one applied cancels the one waiting. It is
// a pure function of the verdicts and the times they were heard at; not
// safe for concurrent use.
type settler struct {
	settle  time.Duration
	has     bool // a verdict was applied
	last    bool // the up of the one applied
	waiting bool
	next    verdict // the one waiting, with the reason of the latest message that said it
	since   time.Time
}

// heard takes the verdict of a message heard at now. It says to apply it
// now (settle is 0, and it differs from the last applied), or returns when
// the verdict waiting is due (the zero time: none waits).
func (s *settler) heard(v verdict, now time.Time) (applyNow bool, due time.Time) {
	switch {
	case s.has && v.up == s.last:
		s.waiting = false
		return false, time.Time{}
	case s.waiting && v.up == s.next.up:
		s.next.reason = v.reason
		return false, s.since.Add(s.settle)
	case s.settle <= 0:
		s.waiting = false
		return true, time.Time{}
	}
	s.waiting, s.next, s.since = true, v, now
	return false, now.Add(s.settle)
}

// due returns the verdict waiting when it has held for settle at now.
func (s *settler) due(now time.Time) (verdict, bool) {
	if !s.waiting || now.Before(s.since.Add(s.settle)) {
		return verdict{}, false
	}
	s.waiting = false
	return s.next, true
}

// applied notes v applied; forget, that the last one could not be, so
// that the next message's verdict is taken as new.
func (s *settler) applied(v verdict) { s.has, s.last = true, v.up }
func (s *settler) forget()           { s.has = false }

// watchTimer is a timer that is off, or set for one time.
type watchTimer struct {
	t   *time.Timer
	set bool
}

func newWatchTimer() *watchTimer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &watchTimer{t: t}
}

// at sets the timer for t, or turns it off for the zero time.
func (w *watchTimer) at(t time.Time) {
	w.t.Stop()
	w.set = !t.IsZero()
	if w.set {
		w.t.Reset(max(time.Until(t), 0))
	}
}

// c is the timer's channel while it is set, else nil (a case never taken).
func (w *watchTimer) c() <-chan time.Time {
	if !w.set {
		return nil
	}
	return w.t.C
}

func (w *watchTimer) fired() { w.set = false }
func (w *watchTimer) stop()  { w.t.Stop() }

// judge returns the watch's verdict on one message, and its reason.
func (s *Server) judge(ctx context.Context, wt watch, msg []byte) (bool, string) {
	ok, err := wt.up.Holds(ctx, msg)
	switch {
	case err != nil:
		return false, fmt.Sprintf("mqtt %s: %s failed: %v", wt.cfg.Topic, wt.cfg.Up, err)
	case ok:
		return true, fmt.Sprintf("mqtt %s: %s is true", wt.cfg.Topic, wt.cfg.Up)
	}
	return false, fmt.Sprintf("mqtt %s: %s is false", wt.cfg.Topic, wt.cfg.Up)
}
