package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/internal/bounds"
	"github.com/fusebox-hq/fusebox/internal/retention"
)

var (
	_ fusebox.Admin = (*Store)(nil)
	_ answers.Store = (*Store)(nil)
)

// Defaults of the options.
const (
	DefaultPrefix         = "fusebox:"
	DefaultDialTimeout    = 2 * time.Second
	DefaultCommandTimeout = 5 * time.Second
	DefaultLockTimeout    = 5 * time.Second
	DefaultLockLease      = time.Minute
	DefaultMaxEvents      = 1000
)

// updateTimeout is how long Update keeps retrying conflicting writes
// before it fails with ErrConflict.
const updateTimeout = 5 * time.Second

// ErrConflict is returned by Update when other writers kept winning the
// compare-and-set for the whole update timeout: Redis answered every time.
var ErrConflict = errors.New("conflicting writes")

// Store keeps circuits in Redis. It is safe for concurrent use.
type Store struct {
	c      *goredis.Client
	prefix string
	ttl    time.Duration

	dialTimeout, commandTimeout time.Duration
	lockTimeout, lockLease      time.Duration
	maxEvents                   int
	logger                      *slog.Logger

	retries atomic.Uint64

	newEpoch string                // the epoch this Store gives a dataset that has none
	epoch    atomic.Pointer[epoch] // the dataset's, as last read
}

// Option configures a Store.
type Option func(*Store)

// WithPrefix sets the prefix of every key (default "fusebox:"), so that
// several installations can share one Redis database.
func WithPrefix(p string) Option { return func(s *Store) { s.prefix = p } }

// WithTTL sets how long an idle circuit's keys, and a stored answer, live
// (default 7 days). d <= 0 keeps the default: a circuit
// tripped until reset is the one thing kept for ever.
func WithTTL(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.ttl = d
		}
	}
}

// WithTimeouts sets the bound of each command: how long connecting may take
// and how long a command may wait for its answer (defaults 2s and 5s). A
// server that refuses the connection fails at once whatever the bound; the
// bound is for a server that is slow, or a host too busy to read its
// answer, which is worth waiting for.
func WithTimeouts(dial, command time.Duration) Option {
	return func(s *Store) { s.dialTimeout, s.commandTimeout = dial, command }
}

// WithLogger sets where the store's own trouble (a damaged key) is logged.
// go-redis's own log lines are dropped (Open sets its logger, once for the
// process): every failure reaches the caller as an error instead.
func WithLogger(l *slog.Logger) Option { return func(s *Store) { s.logger = l } }

// IsURL reports whether state names a Redis store rather than a directory.
func IsURL(state string) bool {
	return strings.HasPrefix(state, "redis://") || strings.HasPrefix(state, "rediss://")
}

// Password returns the password in a redis:// URL, "" when it has none: the
// secret a front end must redact.
func Password(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.User == nil {
		return ""
	}
	p, _ := u.User.Password()
	return p
}

// Open returns the Store at rawURL, redis://[user:pass@]host[:port][/db] or
// rediss:// for TLS, with go-redis's URL options (dial_timeout,
// read_timeout and write_timeout among them, which win over WithTimeouts).
// It does not connect: the first command does, within its budget. Errors
// never contain the URL's password.
func Open(rawURL string, opts ...Option) (*Store, error) {
	s := &Store{
		prefix: DefaultPrefix, ttl: retention.GCAfter,
		dialTimeout: DefaultDialTimeout, commandTimeout: DefaultCommandTimeout,
		lockTimeout: DefaultLockTimeout, lockLease: DefaultLockLease,
		maxEvents: DefaultMaxEvents, newEpoch: randomToken(),
	}
	for _, o := range opts {
		o(s)
	}
	o, err := goredis.ParseURL(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL, password and all
		}
		msg := err.Error()
		if p := Password(rawURL); p != "" {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
		// A URL mistyped so that its user:pass@ is not parsed as userinfo
		// (redis:///:secret@host) can still hold a password: redact that too.
		if p := misplacedPassword(rawURL); len(p) >= 4 {
			msg = strings.ReplaceAll(msg, p, "xxxxx")
		}
		return nil, fmt.Errorf("open redis state: %s", msg)
	}
	// The URL's dial_timeout, read_timeout and write_timeout win over the
	// options: they are how a user widens the budget of a busy host.
	q := urlQuery(rawURL)
	if !q.Has("dial_timeout") {
		o.DialTimeout = s.dialTimeout
	}
	if !q.Has("read_timeout") {
		o.ReadTimeout = s.commandTimeout
	}
	if !q.Has("write_timeout") {
		o.WriteTimeout = s.commandTimeout
	}
	s.dialTimeout, s.commandTimeout = o.DialTimeout, max(o.ReadTimeout, o.WriteTimeout)
	o.ContextTimeoutEnabled = true
	o.PoolTimeout = s.dialTimeout + s.commandTimeout
	// A command fails within its budget, once: no retries, no redials, and
	// no handshake beyond AUTH and SELECT.
	o.MaxRetries = -1
	o.DialerRetries = 1
	o.Protocol = 2
	o.DisableIdentity = true
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	quietOnce.Do(func() { goredis.SetLogger(quiet{}) })
	s.c = goredis.NewClient(o)
	return s, nil
}

// misplacedPassword returns what stands for a password in rawURL read
// loosely, from after the first ":" following the scheme's "://" up to the
// first "@", "" when there is no such text.
func misplacedPassword(rawURL string) string {
	_, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return ""
	}
	user, _, ok := strings.Cut(rest, "@")
	if !ok {
		return ""
	}
	_, pass, _ := strings.Cut(user, ":")
	return pass
}

func urlQuery(rawURL string) url.Values {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	return u.Query()
}

// quiet drops go-redis's own log lines, which it writes to stderr: a
// failure reaches the caller as an error, and the one warning a fallback
// gives names it.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

// Retries returns how many times Update has retried after a conflicting
// write since the Store was opened.
func (s *Store) Retries() uint64 { return s.retries.Load() }

// Close closes the connections.
func (s *Store) Close() error { return s.c.Close() }

func (s *Store) stateKey(name string) string  { return s.prefix + "s:" + name }
func (s *Store) countsKey(name string) string { return s.prefix + "c:" + name }
func (s *Store) eventsKey(name string) string { return s.prefix + "e:" + name }
func (s *Store) answerKey(key string) string  { return s.prefix + "a:" + key }
func (s *Store) lockKey(key string) string    { return s.prefix + "x:" + key }
func (s *Store) namesKey() string             { return s.prefix + "names" }
func (s *Store) answersKey() string           { return s.prefix + "answers" }
func (s *Store) epochKey() string             { return s.prefix + "epoch" }

// budget bounds one round trip: connecting, if a connection must be made,
// and the command.
func (s *Store) budget(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.dialTimeout+s.commandTimeout)
}

func wrap(verb, name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("redis %s %s: %w", verb, name, err)
}

func score(t time.Time) float64 { return float64(t.UnixMilli()) }

func ttlArg(d time.Duration) int64 { return d.Milliseconds() }

// Load reads the circuit's state in one command.
func (s *Store) Load(ctx context.Context, name string) (breaker.State, error) {
	_, st, err := s.read(ctx, name)
	return st, wrap("load", name, err)
}

// read returns the state and its version ("0" when never stored), in one
// script call that checks the record's size before anything of it is sent:
// a state larger than bounds.MaxStateSize (or a version longer than a
// number) is moved aside unread, as damage, and the circuit starts afresh.
func (s *Store) read(ctx context.Context, name string) (string, breaker.State, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return "", breaker.State{}, err
	}
	k := s.stateKey(name)
	var vals []any
	err := s.mended(ctx, name, []typedKey{{k, typeHash}}, func() (err error) {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		vals, err = readScript().Run(bctx, s.c, []string{k, s.asideName(k), s.epochKey(), s.asideName(s.epochKey())}, bounds.MaxStateSize, maxVersionLen, ttlArg(s.ttl), s.newEpoch).Slice()
		return err
	})
	if err != nil {
		return "", breaker.State{}, err
	}
	if len(vals) != 4 && len(vals) != 6 {
		return "", breaker.State{}, fmt.Errorf("read %s: %d values from the read script, want 4 or 6", k, len(vals))
	}
	epoch, _ := vals[2].([]any)
	s.sawEpoch(epoch, vals[3])
	if len(vals) == 6 {
		size, _ := vals[4].(int64)
		problem := fmt.Errorf("its state holds %d bytes, more than the %d a record may", size, bounds.MaxStateSize)
		if size <= bounds.MaxStateSize {
			vlen, _ := vals[5].(int64)
			problem = fmt.Errorf("its version holds %d bytes, more than a number", vlen)
		}
		s.logDamaged(name, k, problem)
		return "0", breaker.State{Name: name}, nil
	}
	version, _ := vals[0].(string)
	if version == "" {
		version = "0"
	}
	st := breaker.State{Name: name}
	raw, _ := vals[1].(string)
	if raw == "" {
		return version, st, nil
	}
	if err := json.Unmarshal([]byte(raw), &st); err != nil || st.Name != name {
		if s.damaged(ctx, name, raw, err) {
			version = "0"
		}
		return version, breaker.State{Name: name}, nil
	}
	return version, st, nil
}

// maxVersionLen bounds a record's version, a decimal count of its writes.
const maxVersionLen = 20

// readScript reads a state hash's version and state unless the state is
// larger than a state may be, or the version longer than a number: then
// it moves the hash aside in the same step, unread, and returns what it
// measured. HSTRLEN costs Redis nothing, and nothing oversized is ever sent.
// The dataset's epoch comes with either answer, checked first (see
// epoch.go), after the commands that fail on a state key of the wrong type:
// a script that fails has changed nothing.
//
//	KEYS: state, aside, epoch, epoch's aside; ARGV: max state bytes, max version bytes, TTL ms, new epoch
//	returns: {version, state, {epoch, changed, mended}, epoch moved aside ("" or why)}, or
//	         {false, false, {epoch, changed, mended}, epoch moved aside, state bytes, version bytes}
var readScript = script(epochCheck + `
local n = redis.call('HSTRLEN', KEYS[1], 'state')
local m = redis.call('HSTRLEN', KEYS[1], 'v')
local bad = epoch_damage(KEYS[3], KEYS[4], ARGV[3], ARGV[4])
local e = redis.call('HMGET', KEYS[3], 'id', 'changed', 'mended')
if n > tonumber(ARGV[1]) or m > tonumber(ARGV[2]) then
  redis.call('RENAME', KEYS[1], KEYS[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return {false, false, e, bad, n, m}
end
local r = redis.call('HMGET', KEYS[1], 'v', 'state')
return {r[1], r[2], e, bad}
`)

// damaged moves a state that does not decode aside, with one ERROR, and
// reports whether it did; the next Update stores a fresh state.
func (s *Store) damaged(ctx context.Context, name, raw string, err error) bool {
	if err == nil {
		err = errors.New("it names another circuit")
	}
	k := s.stateKey(name)
	bctx, cancel := s.budget(ctx)
	defer cancel()
	n, serr := damagedStateScript().Run(bctx, s.c, []string{k, s.asideName(k)}, raw, ttlArg(s.ttl)).Int()
	if serr != nil || n != 1 {
		return false
	}
	s.logDamaged(name, k, err)
	return true
}

// casScript stores a state when its version is still the one read, with its
// events, and refreshes (or, for a trip until reset, removes) the TTLs. It
// checks the type of every key it writes before it writes any, so that a
// damaged one (moved aside by the caller, who runs it again) never leaves
// the state stored and its events not: fn would then run twice. It
// gives the dataset an epoch when it has none (an epoch that is not one is
// moved aside first: see epoch.go), and returns it and what was wrong with
// the one moved aside; 0 when it stored nothing.
//
//	returns: {{epoch, changed, mended}, epoch moved aside ("" or why)}
//
//	KEYS: state, events, names, counts, epoch, epoch's aside
//	ARGV: version read, state JSON, TTL ms (0: persist), max events, score, name, new epoch, store's TTL ms, events...
var casScript = script(epochCheck + `
for _, k in ipairs({{1, 'hash'}, {2, 'stream'}, {3, 'zset'}, {4, 'hash'}}) do
  local t = redis.call('TYPE', KEYS[k[1]]).ok
  if t ~= 'none' and t ~= k[2] then
    return redis.error_reply('WRONGTYPE ' .. KEYS[k[1]] .. ' is a ' .. t)
  end
end
local v = redis.call('HGET', KEYS[1], 'v')
if (v or '0') ~= ARGV[1] then return 0 end
local bad = epoch_damage(KEYS[5], KEYS[6], ARGV[8], ARGV[7])
redis.call('HSET', KEYS[1], 'v', tostring(tonumber(ARGV[1]) + 1), 'state', ARGV[2])
redis.call('HSETNX', KEYS[5], 'id', ARGV[7])
if tonumber(redis.call('HGET', KEYS[5], 'changed') or '0') < tonumber(ARGV[5]) then
  redis.call('HSET', KEYS[5], 'changed', ARGV[5])
end
for i = 9, #ARGV do
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], '*', 'e', ARGV[i])
end
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[6])
local ttl = tonumber(ARGV[3])
for _, k in ipairs({KEYS[1], KEYS[2], KEYS[4]}) do
  if ttl > 0 then redis.call('PEXPIRE', k, ttl) else redis.call('PERSIST', k) end
end
return {redis.call('HMGET', KEYS[5], 'id', 'changed', 'mended'), bad}
`)

// Update reads, runs fn and writes back with a compare-and-set, retrying
// from a fresh read when another writer came first (see the package doc).
func (s *Store) Update(ctx context.Context, name string, fn func(*breaker.State) ([]breaker.Event, bool)) (breaker.State, error) {
	deadline := time.Now().Add(updateTimeout)
	for attempt := 0; ; attempt++ {
		version, st, err := s.read(ctx, name)
		if err != nil {
			return breaker.State{}, wrap("update", name, err)
		}
		events, changed := fn(&st)
		if !changed {
			return st, nil
		}
		stored, err := s.compareAndSet(ctx, name, version, st, events)
		if err != nil {
			return breaker.State{}, wrap("update", name, err)
		}
		if stored {
			return st, nil
		}
		s.retries.Add(1)
		if time.Now().After(deadline) {
			return breaker.State{}, fmt.Errorf("redis update %s: %w (%w): %d in %s", name, ErrConflict, fusebox.ErrLockTimeout, attempt+1, updateTimeout)
		}
		// Spread contending writers: a random wait up to 1, 2, 4 ... 16 ms.
		wait := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 4)))
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return breaker.State{}, wrap("update", name, ctx.Err())
		}
	}
}

func (s *Store) compareAndSet(ctx context.Context, name, version string, st breaker.State, events []breaker.Event) (bool, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return false, err
	}
	ttl := ttlArg(s.ttl)
	switch {
	case st.Phase == breaker.ForcedOpen && st.OpenPeriod == 0: // tripped until reset: kept however long unused
		ttl = 0
	case st.Phase == breaker.ForcedOpen && st.OpenUntil.After(time.Now()):
		ttl = ttlArg(time.Until(st.OpenUntil) + s.ttl) // a timed trip outlives its unused period
	}
	// The state's own time is the epoch's changed: a host then tells
	// whether a state it holds is the latest change it saw anywhere.
	changed := st.UpdatedAt
	if changed.IsZero() {
		changed = time.Now()
	}
	args := []any{version, b, ttl, s.maxEvents, strconv.FormatInt(changed.UnixMilli(), 10), name, s.newEpoch, ttlArg(s.ttl)}
	for _, e := range events {
		eb, err := json.Marshal(e)
		if err != nil {
			return false, err
		}
		args = append(args, eb)
	}
	keys := []string{s.stateKey(name), s.eventsKey(name), s.namesKey(), s.countsKey(name), s.epochKey(), s.asideName(s.epochKey())}
	var reply any
	err = s.mended(ctx, name, s.circuitKeys(name), func() (err error) {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		reply, err = casScript().Run(bctx, s.c, keys, args...).Result()
		return err
	})
	e, stored := reply.([]any)
	if err != nil || !stored || len(e) != 2 {
		return false, err
	}
	epoch, _ := e[0].([]any)
	s.sawEpoch(epoch, e[1])
	return true, nil
}

// circuitKeys are the keys of a circuit's record, and the list of names.
func (s *Store) circuitKeys(name string) []typedKey {
	return []typedKey{{s.stateKey(name), typeHash}, {s.eventsKey(name), typeStream}, {s.namesKey(), typeZSet}, {s.countsKey(name), typeHash}}
}

// countScript adds to the counters and raises LastSuccess, kept as
// zero-padded Unix nanoseconds so that comparing strings compares times.
// The counters live as long as the state at least (a caller that knows no
// configured TTL never shortens it), and
// for ever beside a trip until reset.
//
// It checks the type of every key it touches before it writes any, so that
// run again after a damaged key is moved aside it does not count twice.
//
// A counter that is not a number (longer than one, or not digits: written
// by someone else) would make HINCRBY fail on every call: the hash is moved
// aside first, in the same step, and the script returns 1 so that the
// caller logs it once; the counting starts afresh.
//
//	KEYS: counts, state, names, counts' aside
//	ARGV: successes, failures, skips, last ("" for none), TTL ms, score, name, max bytes of a counter
//	returns: 1 when the counters were moved aside, else 0
var countScript = script(`
for _, k in ipairs({{1, 'hash'}, {2, 'hash'}, {3, 'zset'}}) do
  local t = redis.call('TYPE', KEYS[k[1]]).ok
  if t ~= 'none' and t ~= k[2] then
    return redis.error_reply('WRONGTYPE ' .. KEYS[k[1]] .. ' is a ' .. t)
  end
end
local moved = 0
for _, f in ipairs({'successes', 'failures', 'skips', 'last'}) do
  local n = redis.call('HSTRLEN', KEYS[1], f)
  if n > tonumber(ARGV[8]) or (n > 0 and not string.match(redis.call('HGET', KEYS[1], f), '^%d+$')) then
    redis.call('RENAME', KEYS[1], KEYS[4])
    redis.call('PEXPIRE', KEYS[4], ARGV[5])
    moved = 1
    break
  end
end
if ARGV[1] ~= '0' then redis.call('HINCRBY', KEYS[1], 'successes', ARGV[1]) end
if ARGV[2] ~= '0' then redis.call('HINCRBY', KEYS[1], 'failures', ARGV[2]) end
if ARGV[3] ~= '0' then redis.call('HINCRBY', KEYS[1], 'skips', ARGV[3]) end
if ARGV[4] ~= '' then
  local cur = redis.call('HGET', KEYS[1], 'last')
  if (not cur) or cur < ARGV[4] then redis.call('HSET', KEYS[1], 'last', ARGV[4]) end
end
local left = redis.call('PTTL', KEYS[2])
if left == -1 then
  redis.call('PERSIST', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], math.max(tonumber(ARGV[5]), left))
end
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[7])
return moved
`)

// Count adds c to the circuit's counters in one script call, without a
// lock.
func (s *Store) Count(ctx context.Context, name string, c fusebox.Counts) error {
	if err := fusebox.ValidateName(name); err != nil {
		return err
	}
	last := ""
	if n := c.LastSuccess.UnixNano(); !c.LastSuccess.IsZero() && n > 0 {
		last = fmt.Sprintf("%020d", n)
	}
	if c.Successes == 0 && c.Failures == 0 && c.Skips == 0 && last == "" {
		return nil
	}
	k := s.countsKey(name)
	moved := 0
	err := s.mended(ctx, name, s.circuitKeys(name), func() (err error) {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		moved, err = countScript().Run(bctx, s.c, []string{k, s.stateKey(name), s.namesKey(), s.asideName(k)},
			c.Successes, c.Failures, c.Skips, last, ttlArg(s.ttl), score(time.Now()), name, maxVersionLen).Int()
		return err
	})
	if moved == 1 {
		s.logDamaged(name, k, errors.New("a counter is not a number"))
	}
	return wrap("count", name, err)
}

// Counts reads the circuit's counters.
func (s *Store) Counts(ctx context.Context, name string) (fusebox.Counts, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return fusebox.Counts{}, err
	}
	k := s.countsKey(name)
	var vals []any
	err := s.mended(ctx, name, []typedKey{{k, typeHash}}, func() (err error) {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		vals, err = countsScript().Run(bctx, s.c, []string{k, s.asideName(k)}, maxVersionLen, ttlArg(s.ttl)).Slice()
		return err
	})
	if err != nil {
		return fusebox.Counts{}, wrap("counts", name, err)
	}
	if len(vals) != 4 {
		s.logDamaged(name, k, fmt.Errorf("a counter holds more than the %d digits of a number", maxVersionLen))
		return fusebox.Counts{}, nil
	}
	return countsOf(vals), nil
}

// countsOf decodes the four counters of an HMGET of a counts hash: a
// missing or unreadable one is zero.
func countsOf(vals []any) fusebox.Counts {
	num := func(v any) uint64 {
		str, _ := v.(string)
		n, _ := strconv.ParseUint(str, 10, 64) // base 10: "last" has leading zeros
		return n
	}
	c := fusebox.Counts{Successes: num(vals[0]), Failures: num(vals[1]), Skips: num(vals[2])}
	if n := num(vals[3]); n > 0 {
		c.LastSuccess = time.Unix(0, int64(n)).UTC()
	}
	return c
}

// countsScript reads the counters unless one of them is longer than a
// number: then it moves the hash aside in the same step, unread, and
// returns nothing.
//
//	KEYS: counts, aside; ARGV: max bytes of a counter, TTL ms
//	returns: {successes, failures, skips, last}, or {}
var countsScript = script(`
for _, f in ipairs({'successes', 'failures', 'skips', 'last'}) do
  if redis.call('HSTRLEN', KEYS[1], f) > tonumber(ARGV[1]) then
    redis.call('RENAME', KEYS[1], KEYS[2])
    redis.call('PEXPIRE', KEYS[2], ARGV[2])
    return {}
  end
end
return redis.call('HMGET', KEYS[1], 'successes', 'failures', 'skips', 'last')
`)

// script defers hashing a Lua script to its first use, keeping it out of the
// init every fusebox run pays for, Redis or not.
func script(src string) func() *goredis.Script {
	return sync.OnceValue(func() *goredis.Script { return goredis.NewScript(src) })
}

// Ping asks Redis for a PONG within the store's bound: how a fallback
// probes whether Redis is back before it moves a host's circuits onto it
// again.
func (s *Store) Ping(ctx context.Context) error {
	bctx, cancel := s.budget(ctx)
	defer cancel()
	return wrap("ping", "", s.c.Ping(bctx).Err())
}
