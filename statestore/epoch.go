package statestore

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/redis"
)

// After the primary lost its data (Redis restarted without persistence, or
// flushed), a host's replica is all that is left of the shared circuits,
// and each host's is its own view: host A's replica may hold a circuit open
// or tripped that host B has reset or closed since, after A's last read,
// which A cannot know. So nothing is restored from a replica: a reset, by a
// person or a probe, is never undone.
//
//   - The primary's dataset has an epoch (redis.Store.Epoch). The host
//     keeps the epoch it last saw in Local.EpochFile; the first read that
//     finds another id (or none) knows the data is gone, and says so once,
//     with one WARN. An epoch that replaced a damaged one (redis.Store's
//     EpochMended) says the data is there: its id is adopted silently.
//   - The replica then follows the primary: its circuits start afresh, as
//     the primary's do, so that a later outage does not bring back what
//     the loss ended. One WARN names the trips it held, so that a person
//     can trip them again; an open circuit opens again on its failures.

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

// epochFileMax bounds the host's epoch file: an id of at most
// redis.MaxEpochID bytes, a space, a Unix time in ms (an int64: at most 20
// bytes with its sign) and a newline.
const epochFileMax = redis.MaxEpochID + 1 + 20 + 1

// readEpoch reads the host's epoch file; a missing or damaged one is no
// epoch known. It reads at most epochFileMax bytes.
func readEpoch(path string) knownEpoch {
	f, err := os.Open(path)
	if err != nil {
		return knownEpoch{}
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, epochFileMax))
	id, ms, _ := strings.Cut(strings.TrimSpace(string(b)), " ")
	n, _ := strconv.ParseInt(ms, 10, 64)
	return knownEpoch{id: id, changed: n}
}

// writeEpoch replaces the host's epoch file (a temporary file renamed over
// it, so that a reader never sees half of one). An id readEpoch could not
// read back (longer than redis.MaxEpochID, or with a space in it) is not
// one the primary gives, and is refused.
func writeEpoch(path string, e knownEpoch) error {
	if len(e.id) > redis.MaxEpochID || strings.ContainsFunc(e.id, unicode.IsSpace) {
		return fmt.Errorf("epoch id %.20q…: not an id Redis gives (at most %d bytes, no space)", e.id, redis.MaxEpochID)
	}
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
// has the replica follow (forgetLost), once for the host.
func (f *Fallback) checkEpoch(ctx context.Context, l *Local) {
	es, ok := f.Primary().(epochStore)
	if !ok || l.EpochFile == "" {
		return
	}
	id, changed, ok := es.Epoch()
	if !ok {
		return
	}
	known := readEpoch(l.EpochFile)
	switch {
	case id == known.id && changed.UnixMilli() <= known.changed:
		return
	case id == known.id || known.id == "" || es.EpochMended():
		// A mended epoch replaced a damaged one: the data is all there.
		if id != "" {
			writeEpoch(l.EpochFile, knownEpoch{id, max(changed.UnixMilli(), known.changed)})
		}
		return
	}
	lock, ok := l.Merged.(answers.Store)
	if !ok {
		return
	}
	wait, cancel := context.WithTimeout(ctx, mergeWait)
	defer cancel()
	lock.Exclusive(wait, "merge", func() error {
		if readEpoch(l.EpochFile) != known {
			return nil // another process of the host has seen to it
		}
		f.forgetLost(ctx, l)
		if id, err := es.EnsureEpoch(ctx); err == nil {
			writeEpoch(l.EpochFile, knownEpoch{id: id})
		}
		return nil
	})
}

// forgetLost has the replica follow a primary that lost its data: each of
// its circuits starts afresh (see above), with one WARN for the loss and
// one naming the trips it held.
func (f *Fallback) forgetLost(ctx context.Context, l *Local) {
	host, _ := os.Hostname()
	log := func(msg string, args ...any) {
		if f.o.Logger != nil {
			f.o.Logger.Warn(msg, append(args, "host", host)...)
		}
	}
	log("the shared state store lost its data (restarted empty, or flushed): nothing is restored from this host's replica, as another host may have reset or closed any circuit since")
	names, err := l.Store.Names(ctx)
	if err != nil {
		return
	}
	var trips []string
	for _, name := range names {
		rep, err := l.Store.Load(ctx, name)
		if err != nil || rep.Phase == "" {
			continue
		}
		if rep.Phase == breaker.ForcedOpen && strictness(rep, f.o.Clock.Now()) >= 3 {
			trips = append(trips, name)
		}
		f.replicateLocal(ctx, l, name, breaker.State{Name: name})
	}
	if len(trips) > 0 {
		log("tripped circuits not restored from this host's replica: another host may have reset them since; trip them again if they should stay tripped",
			"circuits", strings.Join(trips, ","))
	}
}
