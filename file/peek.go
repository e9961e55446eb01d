package file

import (
	"context"
	"errors"
	"fmt"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
)

// Peek reads the circuit's state as Load does, but changes nothing: a
// damaged state file (one Load would move aside) is reported as an error
// wrapping fusebox.ErrDamaged that names the file and its problem, with the
// fresh state Load would then start from.
func (s *Store) Peek(_ context.Context, name string) (breaker.State, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return breaker.State{}, fmt.Errorf("load: %w", err)
	}
	st, err := s.readState(name)
	if d := (*damage)(nil); errors.As(err, &d) {
		return breaker.State{Name: name}, fmt.Errorf("%s is %w (%s)", s.statePath(name), fusebox.ErrDamaged, d.problem)
	}
	if err != nil {
		return breaker.State{}, fmt.Errorf("load %s: %w", name, err)
	}
	return st, nil
}
