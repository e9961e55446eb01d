package serve

import (
	"context"
	"fmt"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/config"
	"github.com/fusebox-hq/fusebox/httpcall"
)

// watch is one circuit's health: mqtt: block, its condition compiled.
type watch struct {
	cfg    config.Watch
	up     *httpcall.Condition
	policy fusebox.BreakerPolicy
}

func compileWatches(ws []config.Watch) ([]watch, error) {
	var out []watch
	for _, w := range ws {
		up, err := httpcall.CompileCondition(w.Up)
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
// store, until ctx ends. A lost broker connection leaves the circuit as
// the last verdict left it. While the verdict is down, the open period is
// renewed before it ends, so that runs keep skipping.
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
		judged bool // a verdict was applied
		up     bool
		reason string
		renew  <-chan time.Time
		timer  *time.Timer
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-msgs:
			was := up
			up, reason = s.judge(ctx, wt, p)
			if judged && up == was {
				continue
			}
			judged = true
		case <-renew:
		}
		renew = nil
		v, _, err := w.health.Circuits().Watched(ctx, wt.cfg.Circuit, wt.policy, up, reason)
		if err != nil {
			s.log.Warn("health: the verdict of "+wt.cfg.Topic+" is not stored; the next message tries again", "circuit", wt.cfg.Circuit, "err", err)
			judged = false
			continue
		}
		if !up && v.Phase == fusebox.Open && v.ReopensIn > 0 {
			// WatchDown renews the period once less than a quarter is left.
			d := max(v.ReopensIn-max(wt.policy.OpenMax, wt.policy.OpenFor)/4+time.Millisecond, time.Millisecond)
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			renew = timer.C
		}
	}
}

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
