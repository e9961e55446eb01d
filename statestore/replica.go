package statestore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
)

// The replica: Local.Store holds the last shared state this host saw of each
// circuit, Local.Merged the same copy (the base a later change on the replica
// is told by) and the counts and events already merged back.

// replicaOf returns the host's Local, nil when it has none.
func (f *Fallback) replicaOf() *Local {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, err := f.localLocked()
	if err != nil || l.Merged == nil {
		return nil
	}
	return l
}

// observe compares a state just read from the primary with the replica's,
// and copies a change into the replica. When the primary turns out to have
// lost its data, the replica follows it first (see checkEpoch).
func (f *Fallback) observe(ctx context.Context, name string, st breaker.State) breaker.State {
	l := f.replicaOf()
	if l == nil {
		return st
	}
	f.checkEpoch(ctx, l)
	rep, err := l.Store.Load(ctx, name)
	if err == nil && st.Phase != "" && (st.Generation != rep.Generation || st.Phase != rep.Phase) {
		f.replicate(ctx, name, st)
	}
	return st
}

// replicate copies a shared state into the replica and its base. Writers
// racing on one circuit converge: the next read from the primary copies its
// state again.
func (f *Fallback) replicate(ctx context.Context, name string, st breaker.State) {
	l := f.replicaOf()
	if l == nil {
		return
	}
	f.replicateLocal(ctx, l, name, st)
}

// mergeLocked merges into the primary, circuit by circuit, what this host
// recorded on its replica while the primary was away: the counts and events
// not merged yet, and the replica's state where it changed and is stricter
// than the primary's (a state the primary lost is restored only as
// checkEpoch decides, not by a merge). The replica then
// holds the merged state. It holds the host's merge lock, so one process
// merges at a time, and reports false without merging when another held it
// for longer than mergeWait. It stops at the first error of the primary.
func (f *Fallback) mergeLocked(ctx context.Context) (merged bool, err error) {
	l, err := f.localLocked()
	if err != nil || l.Merged == nil {
		return true, nil // nothing kept to merge
	}
	lock, ok := l.Merged.(answers.Store)
	if !ok {
		return true, nil
	}
	h, err := f.healthLocked().Load(ctx, healthCircuit)
	if err != nil {
		return true, nil
	}
	wait, cancel := context.WithTimeout(ctx, mergeWait)
	defer cancel()
	err = lock.Exclusive(wait, "merge", func() error {
		merged = true
		names, err := l.Store.Names(ctx)
		if err != nil {
			return nil // nothing readable to merge
		}
		for _, name := range names {
			if err := f.mergeCircuit(ctx, l, name, h.FailingSince); err != nil {
				return err
			}
		}
		return nil
	})
	if !merged {
		return false, nil // busy: the process holding the lock merges
	}
	return true, err
}

func (f *Fallback) mergeCircuit(ctx context.Context, l *Local, name string, outageStart time.Time) error {
	rep, err1 := l.Store.Load(ctx, name)
	base, err2 := l.Merged.Load(ctx, name)
	have, err3 := l.Store.Counts(ctx, name)
	done, err4 := l.Merged.Counts(ctx, name)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil // this circuit's local records cannot be read: nothing to merge
	}
	// Changed on the replica during the outage: not the copy last made, and
	// written since the outage began (a copy racing another holds a shared
	// state from before).
	changed := !sameJSON(rep, base) && !rep.UpdatedAt.Before(outageStart)
	delta := fusebox.Counts{Successes: since(have.Successes, done.Successes), Failures: since(have.Failures, done.Failures), Skips: since(have.Skips, done.Skips)}
	events, err := l.Store.Events(ctx, name, done.LastSuccess)
	if err != nil {
		events = nil
	}
	for len(events) > 0 && !events[0].Time.After(done.LastSuccess) {
		events = events[1:]
	}
	if !changed && len(events) == 0 && delta == (fusebox.Counts{}) {
		return nil
	}

	st, err := f.primary.Update(ctx, name, func(cur *breaker.State) ([]breaker.Event, bool) {
		take := changed && stricter(rep, *cur, f.o.Clock.Now())
		if take {
			*cur = adopt(rep, *cur)
		}
		return events, take || len(events) > 0
	})
	if err != nil {
		return err
	}
	if len(events) > 0 {
		l.Merged.Count(ctx, name, fusebox.Counts{LastSuccess: events[len(events)-1].Time})
	}
	if delta != (fusebox.Counts{}) {
		delta.LastSuccess = have.LastSuccess
		if err := f.primary.Count(ctx, name, delta); err != nil {
			return err
		}
		delta.LastSuccess = time.Time{}
		l.Merged.Count(ctx, name, delta)
	}
	if st.Phase != "" {
		f.replicateLocal(ctx, l, name, st)
	}
	return nil
}

// since is what a counter gained since the mark; a counter below its mark
// (its records removed and started again) gained all it holds.
func since(now, mark uint64) uint64 {
	if now < mark {
		return now
	}
	return now - mark
}

func (f *Fallback) replicateLocal(ctx context.Context, l *Local, name string, st breaker.State) {
	set := func(cur *breaker.State) ([]breaker.Event, bool) { *cur = st; return nil, true }
	if _, err := l.Store.Update(ctx, name, set); err == nil {
		l.Merged.Update(ctx, name, set)
	}
}

func sameJSON(a, b breaker.State) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
