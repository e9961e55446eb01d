package redis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/fusebox-hq/fusebox"
)

var _ fusebox.BudgetStore = (*Store)(nil)

// A circuit's retry budget is two sorted sets, PREFIX bf:NAME of its first
// attempts and PREFIX br:NAME of its retries, each member scored by its
// time in Unix microseconds (exact in a float64) and expiring a window
// after its last write: one script call trims both to the window, counts
// them and adds the attempt when the budget allows it, atomically for
// every host. Only a circuit with a retry budget has them, and no name is
// listed for them.
//
// A set of the wrong type is moved aside (mended, as a circuit's keys); one
// of more than maxBudgetMembers members (the file store's bound, a million
// attempts a window) is too, by the script, before it reads a member.
func (s *Store) budgetKeys(name string) []string {
	return []string{s.prefix + "bf:" + name, s.prefix + "br:" + name}
}

// budgetScript is internal/budgetlog's Log.Spend in Lua, the allowance
// (budgetlog.Allowed) included, and so is the clamp of an attempt dated
// after now to now (a host whose clock is ahead).
//
//	KEYS: firsts, retries, firsts' aside, retries' aside
//	ARGV: now µs, window µs, window ms, retry ("1" or "0"), percent, min, member, max members, TTL ms
//	returns: {allowed (1 or 0), firsts, retries, members of the set moved aside (0: none), its key}
var budgetScript = script(`
local moved, n = {0, ''}, {redis.call('ZCARD', KEYS[1]), redis.call('ZCARD', KEYS[2])}
for i = 1, 2 do
  if n[i] > tonumber(ARGV[8]) then
    redis.call('RENAME', KEYS[i], KEYS[i + 2])
    redis.call('PEXPIRE', KEYS[i + 2], ARGV[9])
    moved = {n[i], KEYS[i]}
  end
end
local now, since = tonumber(ARGV[1]), tonumber(ARGV[1]) - tonumber(ARGV[2])
for i = 1, 2 do
  local k = KEYS[i]
  redis.call('ZREMRANGEBYSCORE', k, '-inf', since)
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', k, '(' .. ARGV[1], '+inf')) do
    redis.call('ZADD', k, 'XX', now, m)
  end
end
local firsts = redis.call('ZCARD', KEYS[1])
local retries = redis.call('ZCARD', KEYS[2])
local key = KEYS[1]
if ARGV[4] == '1' then
  local allowed = math.floor(tonumber(ARGV[5]) * firsts + 1e-9) + tonumber(ARGV[6])
  if retries + 1 > allowed then return {0, firsts, retries, moved[1], moved[2]} end
  retries = retries + 1
  key = KEYS[2]
else
  firsts = firsts + 1
end
redis.call('ZADD', key, now, ARGV[7])
redis.call('PEXPIRE', key, ARGV[3])
return {1, firsts, retries, moved[1], moved[2]}
`)

// maxBudgetMembers bounds each of a circuit's budget sets.
const maxBudgetMembers = 1 << 20

// SpendBudget decides an attempt under the circuit's retry budget in one
// script call (see budgetKeys).
func (s *Store) SpendBudget(ctx context.Context, name string, b fusebox.RetryBudget, now time.Time, retry bool) (fusebox.BudgetSpend, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return fusebox.BudgetSpend{}, err
	}
	keys := s.budgetKeys(name)
	us := now.UnixMicro()
	flag := "0"
	if retry {
		flag = "1"
	}
	member := strconv.FormatInt(us, 10) + ":" + strconv.FormatUint(rand.Uint64(), 36) // two attempts in one µs are two members
	var res []any
	err := s.mended(ctx, name, []typedKey{{keys[0], typeZSet}, {keys[1], typeZSet}}, func() (err error) {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		res, err = budgetScript().Run(bctx, s.c, append(keys, s.asideName(keys[0]), s.asideName(keys[1])),
			us, b.Window.Microseconds(), max(b.Window.Milliseconds(), 1), flag,
			strconv.FormatFloat(b.Percent, 'g', -1, 64), b.Min, member, maxBudgetMembers, ttlArg(s.ttl)).Slice()
		return err
	})
	if err != nil {
		return fusebox.BudgetSpend{}, wrap("spend budget", name, err)
	}
	if len(res) != 5 {
		return fusebox.BudgetSpend{}, fmt.Errorf("redis spend budget %s: %d values from the budget script, want 5", name, len(res))
	}
	num := func(v any) int { n, _ := v.(int64); return int(n) }
	if n := num(res[3]); n > 0 {
		k, _ := res[4].(string)
		s.logDamaged(name, k, fmt.Errorf("it holds %d attempts, more than the %d of a budget", n, maxBudgetMembers))
	}
	return fusebox.BudgetSpend{Allowed: num(res[0]) == 1, Firsts: num(res[1]), Retries: num(res[2])}, nil
}
