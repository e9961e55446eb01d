package redis

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	goredis "github.com/redis/go-redis/v9"
)

// A key of the wrong type (written by hand, by another program, or by an
// older fusebox under the same prefix) makes every command on it fail with
// WRONGTYPE. That is the circuit's problem, not Redis's: the key is renamed
// aside (PREFIX damaged:KEY, with the store's TTL), one ERROR names it and
// its circuit, and the command runs again on a fresh key. Redis stays in use
// for every other circuit.

// Types of the keys (the reply of TYPE).
const (
	typeHash   = "hash"
	typeStream = "stream"
	typeZSet   = "zset"
	typeString = "string"
)

// typedKey is a key a command touches and the type it must have.
type typedKey struct{ name, typ string }

// wrongType reports whether err is Redis refusing a command on a key of the
// wrong type.
func wrongType(err error) bool { return goredis.HasErrorPrefix(err, "WRONGTYPE") }

// asideScript renames each key whose type is not the one wanted (and not
// missing) to its aside name, with a TTL, in one step, and returns each key
// moved followed by the type it had.
//
//	KEYS: keys..., asides...; ARGV: TTL ms, types wanted...
var asideScript = script(`
local n = #KEYS / 2
local out = {}
for i = 1, n do
  local t = redis.call('TYPE', KEYS[i]).ok
  if t ~= 'none' and t ~= ARGV[i + 1] then
    redis.call('RENAME', KEYS[i], KEYS[n + i])
    redis.call('PEXPIRE', KEYS[n + i], ARGV[1])
    table.insert(out, KEYS[i])
    table.insert(out, t)
  end
end
return out
`)

// asideName is where a damaged key is moved: PREFIX damaged:KEY.
func (s *Store) asideName(k string) string {
	return s.prefix + "damaged:" + strings.TrimPrefix(k, s.prefix)
}

// setAsideWrongTypes moves aside those of keys whose type is wrong, logging
// one ERROR for each, and reports whether it moved any (when it moved none,
// another process did, or the error was not about these keys).
func (s *Store) setAsideWrongTypes(ctx context.Context, circuit string, keys []typedKey) bool {
	ks := make([]string, 0, 2*len(keys))
	args := []any{ttlArg(s.ttl)}
	for _, k := range keys {
		ks = append(ks, k.name)
		args = append(args, k.typ)
	}
	for _, k := range keys {
		ks = append(ks, s.asideName(k.name))
	}
	bctx, cancel := s.budget(ctx)
	defer cancel()
	moved, err := asideScript().Run(bctx, s.c, ks, args...).StringSlice()
	if err != nil {
		return false
	}
	for i := 0; i+1 < len(moved); i += 2 {
		want := ""
		for _, k := range keys {
			if k.name == moved[i] {
				want = k.typ
			}
		}
		s.logDamaged(circuit, moved[i], errors.New("it is a "+moved[i+1]+", not a "+want))
	}
	return len(moved) > 0
}

// logDamaged gives the one ERROR of a damaged key moved aside. The key is
// the attribute "redis" (as the file store's is "file"): an attribute named
// "key", or "redis_key", reads to a log's redactor as a credential's name,
// and the line would hide the very key it is about.
func (s *Store) logDamaged(circuit, k string, err error) {
	if s.logger == nil {
		return
	}
	args := []any{"redis", k, "aside", s.asideName(k), "err", err}
	if circuit != "" {
		args = append([]any{"circuit", circuit}, args...)
		s.logger.Error("damaged Redis key moved aside; the circuit starts afresh", args...)
		return
	}
	s.logger.Error("damaged Redis key moved aside; it starts afresh", args...)
}

// mended runs op and, when Redis refuses it because one of keys has the
// wrong type, moves the wrong keys aside and runs op once more.
func (s *Store) mended(ctx context.Context, circuit string, keys []typedKey, op func() error) error {
	err := op()
	if wrongType(err) && s.setAsideWrongTypes(ctx, circuit, keys) {
		err = op()
	}
	return err
}

// damagedStateScript moves a state hash aside when its state field is still
// the one that did not decode: a process that already replaced it with a
// fresh state keeps that.
//
//	KEYS: state, aside; ARGV: the damaged state, TTL ms
var damagedStateScript = script(`
if redis.call('HGET', KEYS[1], 'state') ~= ARGV[1] then return 0 end
redis.call('RENAME', KEYS[1], KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
`)

// Answered reports whether err is Redis answering a command with an error
// about the request or a record, which says nothing against using it for
// other circuits: a conflict that outlasted the update timeout, or a reply
// error other than those of a server that cannot serve (loading, busy,
// read-only, out of memory, refusing the password or the command). A
// connection refused, a timeout or such a reply means Redis is unavailable.
func Answered(err error) bool {
	if errors.Is(err, ErrConflict) {
		return true
	}
	var re goredis.Error
	if !errors.As(err, &re) {
		return false
	}
	switch {
	case goredis.IsLoadingError(err), goredis.IsReadOnlyError(err), goredis.IsClusterDownError(err),
		goredis.IsTryAgainError(err), goredis.IsMasterDownError(err), goredis.IsMaxClientsError(err),
		goredis.IsAuthError(err), goredis.IsPermissionError(err), goredis.IsOOMError(err),
		goredis.HasErrorPrefix(err, "BUSY"), goredis.HasErrorPrefix(err, "MISCONF"), goredis.HasErrorPrefix(err, "NOREPLICAS"):
		return false
	}
	return true
}

// Refused reports whether err says Redis is plainly not there, or will not
// have this client, rather than slow: the connection was refused, reset or
// closed, the host or network is unreachable, the name does not resolve, or
// Redis refused the password. A timeout is not: on a busy host it says as
// much about the host as about Redis.
func Refused(err error) bool {
	var oe *net.OpError
	var de *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH), errors.Is(err, io.EOF),
		goredis.IsAuthError(err):
		return true
	case errors.As(err, &de):
		return !de.IsTimeout
	case errors.As(err, &oe):
		return oe.Op == "dial" && !oe.Timeout()
	}
	return false
}
