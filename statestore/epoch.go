package statestore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
)

// After the primary lost its data (Redis restarted without persistence, or
// flushed), a host's replica is all that is left of the shared circuits,
// and each host's is its own view: host A's replica may hold a trip that
// host B has reset since, which A never saw. A replica therefore restores
// only what no later change can contradict:
//
//   - The primary's dataset has an epoch (redis.Store.Epoch): an id, and
//     the time of the latest state written by any host. The host keeps the
//     epoch it last saw in Local.EpochFile; the first read that finds
//     another id (or none) knows the data is gone, and says so once, with
//     one WARN. An epoch that replaced a damaged one (redis.Store's
//     EpochMended) says the data is there: its id is adopted silently.
//   - A circuit is restored only when the replica's state of it is at
//     least as recent as the latest change the host saw anywhere in the lost
//     dataset, and more recent than what the new dataset already holds of it
//     (a host that comes later with a newer state, a reset, wins over it).
//   - A trip by hand is never restored: any host may have reset it after
//     this one last looked, and a reset must not be undone. One WARN names
//     the trips not restored, so that a person can trip them again. An
//     open circuit is restored: it ends by itself, and a probe decides.
//
// What this cannot know is a change made elsewhere after the host's last
// read and before the loss; that is why a trip, which lasts until someone
// acts, is left to a person.

// epochStore is a primary that keeps an epoch (redis.Store).
type epochStore interface {
	Epoch() (id string, changed time.Time, ok bool)
	EpochMended() bool
	EnsureEpoch(ctx context.Context) (string, error)
}

// knownEpoch is what a host keeps of the primary's epoch.
type knownEpoch struct {
	id      string
	changed int64 // Unix ms
}

// readEpoch reads the host's epoch file; a missing or damaged one is no
// epoch known.
func readEpoch(path string) knownEpoch {
	f, err := os.Open(path)
	if err != nil {
		return knownEpoch{}
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 128))
	id, ms, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	n, _ := strconv.ParseInt(ms, 10, 64)
	return knownEpoch{id: id, changed: n}
}

// writeEpoch replaces the host's epoch file (a temporary file renamed over
// it, so that a reader never sees half of one).
func writeEpoch(path string, e knownEpoch) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".redis-epoch-*")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(tmp, "%s %d\n", e.id, e.changed)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// checkEpoch compares the epoch the primary's last read found with the
// host's, keeps the newer knowledge, and when the primary lost its data
// restores what the replica may (restoreLost), once for the host. It
// reports whether it restored.
func (f *Fallback) checkEpoch(ctx context.Context, l *Local) bool {
	es, ok := f.Primary().(epochStore)
	if !ok || l.EpochFile == "" {
		return false
	}
	id, changed, ok := es.Epoch()
	if !ok {
		return false
	}
	known := readEpoch(l.EpochFile)
	switch {
	case id == known.id && changed.UnixMilli() <= known.changed:
		return false
	case id == known.id || known.id == "" || es.EpochMended():
		// A mended epoch replaced a damaged one: the data is all there.
		if id != "" {
			writeEpoch(l.EpochFile, knownEpoch{id, max(changed.UnixMilli(), known.changed)})
		}
		return false
	}
	lock, ok := l.Merged.(answers.Store)
	if !ok {
		return false
	}
	wait, cancel := context.WithTimeout(ctx, mergeWait)
	defer cancel()
	restored := false
	lock.Exclusive(wait, "merge", func() error {
		if readEpoch(l.EpochFile) != known {
			return nil // another process of the host has seen to it
		}
		restored = f.restoreLost(ctx, l, known)
		if id, err := es.EnsureEpoch(ctx); err == nil {
			writeEpoch(l.EpochFile, knownEpoch{id: id})
		}
		return nil
	})
	return restored
}

// restoreLost restores into the primary, which lost its data, what the
// replica holds that no later change can contradict (see above), and logs
// the loss, each circuit restored and the trips not restored.
func (f *Fallback) restoreLost(ctx context.Context, l *Local, known knownEpoch) bool {
	host, _ := os.Hostname()
	log := func(level slog.Level, msg string, args ...any) {
		if f.o.Logger != nil {
			f.o.Logger.Log(ctx, level, msg, append(args, "host", host)...)
		}
	}
	log(slog.LevelWarn, "the shared state store lost its data (restarted empty, or flushed): restoring from this host's replica only what no later change can contradict")
	names, err := l.Store.Names(ctx)
	if err != nil {
		return false
	}
	var trips []string
	restored := false
	for _, name := range names {
		rep, err := l.Store.Load(ctx, name)
		now := f.o.Clock.Now()
		switch {
		case err != nil || rep.Phase == "":
			continue
		case rep.Phase == breaker.ForcedOpen && strictness(rep, now) >= 3:
			trips = append(trips, name)
			continue
		case rep.UpdatedAt.UnixMilli() < known.changed:
			continue // not the latest change this host saw: another host's may be later
		}
		took := false
		got, err := f.Primary().Update(ctx, name, func(cur *breaker.State) ([]breaker.Event, bool) {
			took = cur.Phase == "" || cur.UpdatedAt.Before(rep.UpdatedAt)
			if took {
				*cur = adopt(rep, *cur)
			}
			return nil, took
		})
		if err != nil {
			return restored
		}
		if took && strictness(got, now) > 0 {
			restored = true
			log(fusebox.LevelNotice, "circuit restored from this host's replica: the shared state store had lost it",
				"circuit", name, "state", got.View(now).Phase, "changed_at", rep.UpdatedAt.UTC().Format(time.RFC3339))
		}
	}
	if len(trips) > 0 {
		log(slog.LevelWarn, "tripped circuits not restored from this host's replica: another host may have reset them since; trip them again if they should stay tripped",
			"circuits", strings.Join(trips, ","))
	}
	return restored
}
