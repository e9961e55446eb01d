// Package failopen opens the state store a front end (fusebox run, call,
// status, the daemon) works with, so that every one of them fails open the
// same way: when the store cannot be opened, Open still returns a Store,
// whose every method fails with the reason. fusebox.Circuits.Do then warns
// once, naming the reason (a state dir refused as unsafe says what to
// change), and runs the call as if its circuit were closed: fusebox itself
// never loses a call.
package failopen

import (
	"context"
	"log/slog"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/file"
)

// Options say where the state lives and how it is kept.
type Options struct {
	Dir       string        // the state dir (file.ResolveDir finds it)
	Fsync     bool          // flush every state write to disk (see file.WithFsync)
	GCAfter   time.Duration // remove circuits unused this long; 0: fusebox.DefaultGCAfter
	EventsFor time.Duration // keep events this long; 0: fusebox.DefaultEventRetention
	Logger    *slog.Logger  // for the store's own warnings; nil: none
}

// Open opens the store o names. It never fails: a store that cannot be
// opened is returned as Unavailable, which Reason reports.
func Open(o Options) fusebox.Store {
	opts := []file.Option{file.WithFsync(o.Fsync), file.WithRetention(o.GCAfter, o.EventsFor)}
	if o.Logger != nil {
		opts = append(opts, file.WithLogger(o.Logger))
	}
	s, err := file.Open(o.Dir, opts...)
	if err != nil {
		return Unavailable{Err: err}
	}
	return s
}

// Reason returns why s is Unavailable, or nil when it is a working store: a
// front end that only reads state (fusebox status) says so instead of
// showing nothing.
func Reason(s fusebox.Store) error {
	if u, ok := s.(Unavailable); ok {
		return u.Err
	}
	return nil
}

var (
	_ fusebox.Store       = Unavailable{}
	_ fusebox.AnswerStore = Unavailable{}
)

// Unavailable is the Store of a state store that could not be opened: every
// method returns Err, and Close does nothing.
type Unavailable struct{ Err error }

func (u Unavailable) Load(context.Context, string) (fusebox.State, error) {
	return fusebox.State{}, u.Err
}

func (u Unavailable) Update(context.Context, string, func(*fusebox.State) ([]fusebox.Event, bool)) (fusebox.State, error) {
	return fusebox.State{}, u.Err
}

func (u Unavailable) Count(context.Context, string, fusebox.Counts) error { return u.Err }

func (u Unavailable) Counts(context.Context, string) (fusebox.Counts, error) {
	return fusebox.Counts{}, u.Err
}

func (u Unavailable) Names(context.Context) ([]string, error) { return nil, u.Err }

func (u Unavailable) Events(context.Context, string, time.Time) ([]fusebox.Event, error) {
	return nil, u.Err
}

func (u Unavailable) AllEvents(context.Context, time.Time) ([]fusebox.Event, error) {
	return nil, u.Err
}

func (u Unavailable) GC(context.Context, time.Time, time.Duration, time.Duration) (fusebox.GCReport, error) {
	return fusebox.GCReport{}, u.Err
}

func (u Unavailable) SaveAnswer(context.Context, string, fusebox.Answer) error { return u.Err }

func (u Unavailable) LoadAnswer(context.Context, string) (fusebox.Answer, bool, error) {
	return fusebox.Answer{}, false, u.Err
}

func (u Unavailable) Exclusive(context.Context, string, func() error) error { return u.Err }

func (u Unavailable) Close() error { return nil }
