package redis

import (
	"context"
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
func (s *Store) budgetKeys(name string) []string {
	return []string{s.prefix + "bf:" + name, s.prefix + "br:" + name}
}

// budgetScript is fusebox.BudgetLog.Spend in Lua, the allowance
// (RetryBudget.Allowed) included, and so is the clamp of an attempt dated
// after now to now (a host whose clock is ahead).
//
//	KEYS: firsts, retries
//	ARGV: now µs, window µs, window ms, retry ("1" or "0"), percent, min, member
//	returns: {allowed (1 or 0), firsts, retries}
var budgetScript = script(`
local now, since = tonumber(ARGV[1]), tonumber(ARGV[1]) - tonumber(ARGV[2])
for _, k in ipairs(KEYS) do
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
  if retries + 1 > allowed then return {0, firsts, retries} end
  retries = retries + 1
  key = KEYS[2]
else
  firsts = firsts + 1
end
redis.call('ZADD', key, now, ARGV[7])
redis.call('PEXPIRE', key, ARGV[3])
return {1, firsts, retries}
`)

// SpendBudget decides an attempt under the circuit's retry budget in one
// script call (see budgetKeys).
func (s *Store) SpendBudget(ctx context.Context, name string, b fusebox.RetryBudget, now time.Time, retry bool) (fusebox.BudgetSpend, error) {
	if err := fusebox.ValidateName(name); err != nil {
		return fusebox.BudgetSpend{}, err
	}
	b = b.WithDefaults()
	keys := s.budgetKeys(name)
	us := now.UnixMicro()
	flag := "0"
	if retry {
		flag = "1"
	}
	member := strconv.FormatInt(us, 10) + ":" + strconv.FormatUint(rand.Uint64(), 36) // two attempts in one µs are two members
	var res []int64
	err := s.mended(ctx, name, []typedKey{{keys[0], typeZSet}, {keys[1], typeZSet}}, func() (err error) {
		bctx, cancel := s.budget(ctx)
		defer cancel()
		res, err = budgetScript().Run(bctx, s.c, keys,
			us, b.Window.Microseconds(), max(b.Window.Milliseconds(), 1), flag,
			strconv.FormatFloat(b.Percent, 'g', -1, 64), b.Min, member).Int64Slice()
		return err
	})
	if err != nil {
		return fusebox.BudgetSpend{}, wrap("spend budget", name, err)
	}
	return fusebox.BudgetSpend{Allowed: res[0] == 1, Firsts: int(res[1]), Retries: int(res[2])}, nil
}
