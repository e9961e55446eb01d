package breaker

import (
	"errors"
	"fmt"
	"time"

	"github.com/fusebox-hq/fusebox/internal/human"
)

// ErrOpen is matched (errors.Is) by every error that means a call was not run
// because its circuit is open, forced open, or half-open with every probe
// slot taken.
var ErrOpen = errors.New("circuit open")

// errNeedLock tells the caller of Decide to decide again under the lock.
var errNeedLock = errors.New("decide under lock")

// OpenError is the ErrOpen of one circuit.
type OpenError struct {
	Name      string
	Phase     Phase
	ReopensIn time.Duration // 0 when forced open until reset
	Probing   bool          // half-open, and another caller holds the probe
}

func (e *OpenError) Error() string {
	switch {
	case e.Probing:
		return fmt.Sprintf("circuit %s is half-open and another caller is probing it", e.Name)
	case e.Phase == ForcedOpen && e.ReopensIn == 0:
		return fmt.Sprintf("circuit %s is forced open until reset", e.Name)
	case e.Phase == ForcedOpen:
		return fmt.Sprintf("circuit %s is forced open (closes in %s)", e.Name, human.Round(e.ReopensIn))
	}
	return fmt.Sprintf("circuit %s is open (probe in %s)", e.Name, human.Round(e.ReopensIn))
}

// Is makes errors.Is(err, ErrOpen) true.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Cause is the kind of a failed attempt: a few words a dashboard can group
// by (fusebox serve's fusebox_failures_by_reason_total). The producers of
// failures define and set their own (httpcall's judge, package runner);
// fusebox's Do sets CauseTimeout for an attempt its timeout or deadline
// cut, and CauseOther when the failure names none.
type Cause string

// The causes every front end shares.
const (
	CauseTimeout Cause = "timeout" // an attempt timeout or a deadline cut it
	CauseOther   Cause = "other"
)
