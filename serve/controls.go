package serve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
)

// ErrUnknownCircuit is Press's error for a circuit the daemon does not
// know (neither an endpoint of its config nor a circuit in the store).
var ErrUnknownCircuit = errors.New("no such circuit")

// Press trips a circuit the daemon knows for tripFor, or resets it when
// tripFor is 0, as POST /api/circuits/NAME/trip?for= and /reset do: on
// the circuits of the config being served, so that the transition is
// notified as theirs are; the event's reason says it was by whom
// (fusebox.Circuits.Trip). A trip press never shortens a trip in force:
// a person's trip until reset stays until reset (fusebox.Circuits.PressTrip).
// Home Assistant's buttons over MQTT press here.
func (s *Server) Press(ctx context.Context, name string, tripFor time.Duration, by string) error {
	wd := s.world.Load()
	if !s.knows(ctx, wd, name) {
		return fmt.Errorf("%s: %w", name, ErrUnknownCircuit)
	}
	c := wd.client.Circuits()
	var err error
	if tripFor > 0 {
		_, err = c.PressTrip(ctx, name, tripFor, by) // never shortening a trip in force
	} else {
		_, err = c.Reset(ctx, name, by)
	}
	return err
}

// Known lists the circuits the daemon knows, sorted: every circuit of its
// config (watched ones that never changed included, as knows has them)
// and the circuits in the store.
func (s *Server) Known(ctx context.Context) ([]string, error) {
	names, err := s.o.Store.Names(ctx)
	if err != nil {
		return nil, fmt.Errorf("list circuits: %w", err)
	}
	wd := s.world.Load()
	names = append(names, wd.catalog.Endpoints...)
	names = append(names, wd.targets.Circuits...)
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Circuit returns a circuit's stored state and the instant it is read
// at, its last failure redacted as the API's rows are.
func (s *Server) Circuit(ctx context.Context, name string) (breaker.State, breaker.Instant, error) {
	st, err := s.o.Store.Load(ctx, name)
	if err != nil {
		return st, breaker.Instant{}, fmt.Errorf("load %s: %w", name, err)
	}
	st.LastFailure = s.world.Load().client.Redactor().String(st.LastFailure)
	return st, s.o.Clock.Now(), nil
}

// LastReason returns the reason of the circuit's last transition in the
// event log, redacted ("" when there is none). It holds that reason, not
// the log.
func (s *Server) LastReason(ctx context.Context, name string) (string, error) {
	last := ""
	err := s.o.Store.ScanEvents(ctx, name, time.Time{}, func(e breaker.Event) bool {
		if e.Kind == breaker.EventTransition {
			last = e.Reason
		}
		return true
	})
	if err != nil {
		return "", fmt.Errorf("read the events of %s: %w", name, err)
	}
	return s.world.Load().client.Redactor().String(last), nil
}

// LastTransition returns the circuit's last transition in the event log,
// its reason redacted; false when the log holds none.
func (s *Server) LastTransition(ctx context.Context, name string) (breaker.Event, bool, error) {
	events, err := s.o.Store.Events(ctx, name, time.Time{})
	if err != nil {
		return breaker.Event{}, false, fmt.Errorf("read the events of %s: %w", name, err)
	}
	for i := len(events) - 1; i >= 0; i-- {
		if e := events[i]; e.Kind == breaker.EventTransition {
			e.Reason = s.world.Load().client.Redactor().String(e.Reason)
			return e, true, nil
		}
	}
	return breaker.Event{}, false, nil
}
