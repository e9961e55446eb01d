// Package statestore opens the state store a front end (fusebox run, call,
// status, the daemon) works with, so that every one of them fails open the
// same way: when the store cannot be opened, Open still returns a Store,
// whose every method fails with the reason. fusebox.Circuits.Do then warns
// once, naming the reason (a state dir refused as unsafe says what to
// change), and runs the call as if its circuit were closed: fusebox itself
// never loses a call.
//
// A state kept in Redis (a redis:// URL) is opened as a Fallback: while Redis
// answers every process on every host shares its circuits, and each host
// keeps a replica of them in its local state dir; while it does not, every
// process of the host uses the replica, after one warning for the host, and
// what they record is merged into Redis when it is back. A replica is one
// Redis's, in a directory of the local state dir named after the store it
// mirrors (ReplicaDir), so that a host pointed at another Redis, another
// database or another prefix keeps another replica and never takes one
// store's circuits for another's. It holds the replica's circuits and:
//
//	REPLICA/.redis-up/        the availability circuit of Redis (a state dir of its own)
//	REPLICA/.redis-merged/    per circuit: the shared state last copied, and what was merged back
//	REPLICA/.redis-epoch      the epoch of Redis's dataset last seen, to notice it lost its data
package statestore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/file"
	"github.com/fusebox-hq/fusebox/mem"
	"github.com/fusebox-hq/fusebox/redis"
)

// Options say where the state lives and how it is kept.
type Options struct {
	// Dir is the state dir (file.ResolveDir finds it), or a
	// redis://[user:pass@]host:port/db (rediss:// for TLS) URL of a store
	// shared across hosts; LocalDir is then the state dir a process falls
	// back to while Redis does not answer.
	Dir       string
	LocalDir  string
	Fsync     bool          // flush every state write to disk (see file.WithFsync)
	GCAfter   time.Duration // remove circuits unused this long; 0: the default, 7 days
	EventsFor time.Duration // keep events this long; 0: the default, 30 days
	Logger    *slog.Logger  // for the store's own warnings; nil: none
	// ReadOnly opens the store for a command that only reads it (status,
	// history, explain): a state dir that is not there is not created, and
	// reads as an empty one.
	ReadOnly bool

	Clock fusebox.Clock // times the availability circuit of Redis; nil: fusebox.WallClock

	// The bound of each Redis command: to connect and to answer (0: the
	// defaults of package redis, 2s and 5s; the URL's dial_timeout,
	// read_timeout and write_timeout win).
	DialTimeout, CommandTimeout time.Duration
	Prefix                      string // of every Redis key; "": redis.DefaultPrefix
}

// Local state dirs: ReplicasDir of the local state dir holds one replica
// per Redis store; the others are in a replica (see the package doc).
const (
	ReplicasDir = ".redis"
	HealthDir   = ".redis-up"
	MergedDir   = ".redis-merged"
	EpochFile   = ".redis-epoch"
)

// ReplicaDir is where a host whose local state dir is localDir keeps its
// replica of the Redis store at rawURL whose keys start with prefix (""
// for redis.DefaultPrefix): localDir/.redis/HOST-PORT-dbDB-HASH, the hash
// over host, port, database and prefix (never the password, nor the user
// or the scheme, which change no data).
func ReplicaDir(localDir, rawURL, prefix string) string {
	host, port, db := "", "6379", "0"
	if u, err := url.Parse(rawURL); err == nil {
		host = strings.ToLower(u.Hostname())
		port = cmp.Or(u.Port(), port)
		db = cmp.Or(strings.Trim(u.Path, "/"), db)
	}
	sum := sha256.Sum256([]byte(host + "\x00" + port + "\x00" + db + "\x00" + cmp.Or(prefix, redis.DefaultPrefix)))
	safe := func(s string) string {
		s = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
				return r
			}
			return '_'
		}, s)
		return s[:min(len(s), 64)]
	}
	return filepath.Join(localDir, ReplicasDir, fmt.Sprintf("%s-%s-db%s-%x", safe(host), safe(port), safe(db), sum[:4]))
}

// Open opens the store o names. It never fails: a store that cannot be
// opened is returned as Unavailable, which Reason reports.
//
// A Redis store comes wrapped in a Fallback to the file store in LocalDir.
// Opened ReadOnly, a state dir that is not there is an empty in-memory
// store (package mem), so that a command that only reads makes no dir.
func Open(o Options) fusebox.Admin {
	if redis.IsURL(o.Dir) {
		return openRedis(o)
	}
	open := openFile
	if o.ReadOnly {
		open = openExisting
	}
	s, err := open(o, o.Dir)
	switch {
	case err != nil:
		return Unavailable{Err: err}
	case s == nil: // no state dir yet: no circuit has a state
		return mem.New()
	}
	return s
}

func openFile(o Options, dir string) (fusebox.Admin, error) {
	opts := []file.Option{file.WithFsync(o.Fsync), file.WithRetention(o.GCAfter, o.EventsFor)}
	if o.Logger != nil {
		opts = append(opts, file.WithLogger(o.Logger))
	}
	return file.Open(dir, opts...)
}

func openRedis(o Options) fusebox.Admin {
	opts := []redis.Option{redis.WithTTL(o.GCAfter)}
	if o.DialTimeout > 0 || o.CommandTimeout > 0 {
		dial, command := cmp.Or(o.DialTimeout, redis.DefaultDialTimeout), cmp.Or(o.CommandTimeout, redis.DefaultCommandTimeout)
		opts = append(opts, redis.WithTimeouts(dial, command))
	}
	if o.Prefix != "" {
		opts = append(opts, redis.WithPrefix(o.Prefix))
	}
	if o.Logger != nil {
		opts = append(opts, redis.WithLogger(o.Logger))
	}
	local := func(create bool) (Local, error) {
		if o.LocalDir == "" {
			return Local{}, errors.New("no local state dir to fall back to")
		}
		dir := ReplicaDir(o.LocalDir, o.Dir, o.Prefix)
		if !create {
			return existingLocal(o, dir)
		}
		if err := makeSubdirs(o.LocalDir, ReplicasDir, filepath.Base(dir)); err != nil {
			return Local{}, err
		}
		s, err := openFile(o, dir)
		if err != nil {
			return Local{}, err
		}
		l := Local{Store: s}
		// Without its bookkeeping the replica still serves an outage; the
		// availability circuit is then each process's own.
		if makeSubdirs(dir, MergedDir) == nil {
			if m, err := openFile(o, filepath.Join(dir, MergedDir)); err == nil {
				l.Merged = m
			}
		}
		if makeSubdirs(dir, HealthDir) == nil {
			if h, err := openFile(o, filepath.Join(dir, HealthDir)); err == nil {
				l.Health = h
			}
		}
		l.EpochFile = filepath.Join(dir, EpochFile)
		return l, nil
	}
	primary, err := redis.Open(o.Dir, opts...)
	if err != nil {
		return Unavailable{Err: err}
	}
	return NewFallback(primary, local, FallbackOptions{Logger: o.Logger, Clock: o.Clock, Answered: redis.Answered, Refused: redis.Refused})
}

// existingLocal opens the replica in dir and its availability circuit as
// far as they are there, creating nothing: a part not there is nil.
func existingLocal(o Options, dir string) (Local, error) {
	s, err := openExisting(o, dir)
	if err != nil || s == nil {
		return Local{}, err
	}
	l := Local{Store: s, EpochFile: filepath.Join(dir, EpochFile)}
	if h, err := openExisting(o, filepath.Join(dir, HealthDir)); err == nil {
		l.Health = h // nil, as when it cannot be opened: each process's own
	}
	return l, nil
}

// openExisting opens the file store in dir when dir is there, and is nil
// without an error when it is not.
func openExisting(o Options, dir string) (fusebox.Admin, error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return openFile(o, dir)
}

// makeSubdirs makes the subdirectories names of dir, each in the last,
// as a state dir makes its own (file.Store.Subdir): in a dir shared with a
// group, every member may use them.
func makeSubdirs(dir string, names ...string) error {
	if fi, err := os.Lstat(filepath.Join(append([]string{dir}, names...)...)); err == nil && fi.IsDir() {
		return nil // made before: Open checks it
	}
	for _, n := range names {
		s, err := file.Open(dir)
		if err != nil {
			return err
		}
		dir, err = s.Subdir(n)
		s.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// Reason returns why s is Unavailable, or nil when it is a working store: a
// front end that only reads state (fusebox status) says so instead of
// showing nothing.
func Reason(s fusebox.Admin) error {
	if u, ok := s.(Unavailable); ok {
		return u.Err
	}
	return nil
}

// Down returns why s cannot be used as asked: Reason, or why a Fallback is
// on its local replica (the shared store is unreachable); nil when s is in
// use as asked. It is what fusebox_state_store_up reports.
func Down(s fusebox.Admin) error {
	if f, ok := s.(*Fallback); ok {
		return f.Down()
	}
	return Reason(s)
}

var (
	_ fusebox.Admin = Unavailable{}
	_ answers.Store = Unavailable{}
)

// Unavailable is the Store of a state store that could not be opened: every
// method returns Err, and Close does nothing.
type Unavailable struct{ Err error }

func (u Unavailable) Load(context.Context, string) (breaker.State, error) {
	return breaker.State{}, u.Err
}

func (u Unavailable) Peek(context.Context, string) (breaker.State, fusebox.Counts, error) {
	return breaker.State{}, fusebox.Counts{}, u.Err
}

func (u Unavailable) PeekNames(context.Context) ([]string, error) { return nil, u.Err }

func (u Unavailable) Update(context.Context, string, func(*breaker.State) ([]breaker.Event, bool)) (breaker.State, error) {
	return breaker.State{}, u.Err
}

func (u Unavailable) Count(context.Context, string, fusebox.Counts) error { return u.Err }

func (u Unavailable) Counts(context.Context, string) (fusebox.Counts, error) {
	return fusebox.Counts{}, u.Err
}

func (u Unavailable) Names(context.Context) ([]string, error) { return nil, u.Err }

func (u Unavailable) Events(context.Context, string, time.Time) ([]breaker.Event, error) {
	return nil, u.Err
}

func (u Unavailable) ScanEvents(context.Context, string, time.Time, func(breaker.Event) bool) error {
	return u.Err
}

func (u Unavailable) AllEvents(context.Context, time.Time) ([]breaker.Event, error) {
	return nil, u.Err
}

func (u Unavailable) GC(context.Context, time.Time, time.Duration, time.Duration) (fusebox.GCReport, error) {
	return fusebox.GCReport{}, u.Err
}

func (u Unavailable) SaveAnswer(context.Context, string, answers.Answer) error { return u.Err }

func (u Unavailable) LoadAnswer(context.Context, string) (answers.Answer, bool, error) {
	return answers.Answer{}, false, u.Err
}

func (u Unavailable) Exclusive(context.Context, string, func() error) error { return u.Err }

func (u Unavailable) SpendBudget(context.Context, string, fusebox.RetryBudget, time.Time, bool) (fusebox.BudgetSpend, error) {
	return fusebox.BudgetSpend{}, u.Err
}

func (u Unavailable) Close() error { return nil }
