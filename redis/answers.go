package redis

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/answers"
	"github.com/fusebox-hq/fusebox/internal/bounds"
)

// SaveAnswer replaces the key's answer, with the store's TTL. The last
// writer wins.
func (s *Store) SaveAnswer(ctx context.Context, key string, a answers.Answer) error {
	if err := fusebox.ValidateName(key); err != nil {
		return fmt.Errorf("save answer: %w", err)
	}
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("save answer %s: %w", key, err)
	}
	err = s.mended(ctx, "", s.answerKeys(key), func() error {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		_, err := s.c.TxPipelined(bctx, func(p goredis.Pipeliner) error {
			p.Set(bctx, s.answerKey(key), b, s.ttl)
			p.ZAdd(bctx, s.answersKey(), goredis.Z{Score: score(time.Now()), Member: key})
			return nil
		})
		return err
	})
	return wrap("save answer", key, err)
}

// answerKeys are the keys of a stored answer, and the list of answers.
func (s *Store) answerKeys(k string) []typedKey {
	return []typedKey{{s.answerKey(k), typeString}, {s.answersKey(), typeZSet}}
}

// LoadAnswer reads the key's answer. One that does not decode is deleted
// and reported missing.
func (s *Store) LoadAnswer(ctx context.Context, key string) (answers.Answer, bool, error) {
	if err := fusebox.ValidateName(key); err != nil {
		return answers.Answer{}, false, fmt.Errorf("load answer: %w", err)
	}
	var b []byte
	var size int64
	err := s.mended(ctx, "", s.answerKeys(key)[:1], func() (err error) {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		v, err := answerScript().Run(bctx, s.c, []string{s.answerKey(key)}, bounds.MaxAnswerSize).Result()
		switch v := v.(type) {
		case string:
			b = []byte(v)
		case int64:
			size = v
		}
		return err
	})
	if errors.Is(err, goredis.Nil) {
		return answers.Answer{}, false, nil
	}
	if err != nil {
		return answers.Answer{}, false, wrap("load answer", key, err)
	}
	if size > 0 { // the script deleted it
		s.dropAnswer(key, fmt.Errorf("it holds %d bytes, more than the %d an answer may", size, bounds.MaxAnswerSize))
		return answers.Answer{}, false, nil
	}
	var a answers.Answer
	if err := json.Unmarshal(b, &a); err != nil {
		s.dropAnswer(key, err)
		bctx, cancel := s.budget(ctx)
		defer cancel()
		s.c.Del(bctx, s.answerKey(key))
		return answers.Answer{}, false, nil
	}
	return a, true, nil
}

// dropAnswer logs the one WARN of a damaged answer.
func (s *Store) dropAnswer(key string, err error) {
	if s.logger != nil {
		s.logger.Warn("damaged stored answer dropped", "answer", key, "err", err)
	}
}

// answerScript reads a stored answer unless it is larger than an answer
// may be: then it deletes it, unread, and returns its size.
//
//	KEYS: answer; ARGV: max bytes
//	returns: the answer, its size when deleted, or nil when there is none
var answerScript = script(`
local n = redis.call('STRLEN', KEYS[1])
if n > tonumber(ARGV[1]) then
  redis.call('DEL', KEYS[1])
  return n
end
return redis.call('GET', KEYS[1])
`)

// lockScript takes a lock: SET NX PX. SET NX fails on a key of any type,
// and a lock with no TTL is never released: either would hold the lock for
// ever, and one whose TTL is longer than the lease for longer than any
// holder may, so such a key is damage, moved aside in the same step with
// one ERROR (the caller's), and the lock taken.
//
//	KEYS: lock, aside; ARGV: token, lease ms, TTL ms
//	returns: {1 when taken, else 0; what was wrong with a key moved aside, or ""}
var lockScript = script(`
local t, bad = redis.call('TYPE', KEYS[1]).ok, ''
if t ~= 'none' and t ~= 'string' then
  bad = 'it is a ' .. t .. ', not a lock'
elseif t == 'string' then
  local left = redis.call('PTTL', KEYS[1])
  if left < 0 then bad = 'it is a lock with no lease'
  elseif left > tonumber(ARGV[2]) then bad = 'it is a lock for ' .. left .. ' ms, longer than a lease' end
end
if bad ~= '' then
  redis.call('RENAME', KEYS[1], KEYS[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1, bad} end
return {0, bad}
`)

// releaseScript deletes a lock only while it still holds the token its
// holder set: a holder whose lease ran out must not free its successor's.
var releaseScript = script(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// Exclusive runs fn holding key's lock: SET NX PX with a random token, so
// that a holder killed mid-fn frees the key when its lease ends, and a safe
// release. A busy key is polled, with a growing random wait (1 to 32 ms),
// until it comes free, ctx ends, or the lock timeout passes.
func (s *Store) Exclusive(ctx context.Context, key string, fn func() error) error {
	if err := fusebox.ValidateName(key); err != nil {
		return fmt.Errorf("lock answer: %w", err)
	}
	token := randomToken()
	lock := s.lockKey(key)
	timeout := time.NewTimer(s.lockTimeout)
	defer timeout.Stop()
	for attempt := 0; ; attempt++ {
		bctx, cancel := s.budget(ctx)
		vals, err := lockScript().Run(bctx, s.c, []string{lock, s.asideName(lock)}, token, s.lockLease.Milliseconds(), ttlArg(s.ttl)).Slice()
		cancel()
		ok := false
		if err == nil && len(vals) == 2 {
			n, _ := vals[0].(int64)
			ok = n == 1
			if p, _ := vals[1].(string); p != "" {
				s.logDamaged("", lock, errors.New(p))
			}
		}
		if err != nil {
			if ended(ctx) {
				return fmt.Errorf("lock answer %s: %w", key, cmp.Or(ctx.Err(), context.DeadlineExceeded))
			}
			return wrap("lock answer", key, err)
		}
		if ok {
			break
		}
		wait := time.Millisecond << min(attempt, 5)
		select {
		case <-time.After(wait/2 + time.Duration(mrand.Int64N(int64(wait/2)))):
		case <-timeout.C:
			return fmt.Errorf("lock answer %s: %w after %s", key, fusebox.ErrLockTimeout, s.lockTimeout)
		case <-ctx.Done():
			return fmt.Errorf("lock answer %s: %w", key, ctx.Err())
		}
	}
	defer func() {
		// Released even when the caller's ctx has ended.
		bctx, cancel := s.budget(context.WithoutCancel(ctx))
		defer cancel()
		releaseScript().Run(bctx, s.c, []string{lock}, token)
	}()
	return fn()
}

// ended reports whether ctx is done or past its deadline: a socket deadline
// set from ctx can fire a moment before ctx reports it ended.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}
