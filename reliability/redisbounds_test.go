package reliability

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fusebox-hq/fusebox/internal/redistest"
	"github.com/fusebox-hq/fusebox/internal/testenv"
)

// Issue 27 item 7: what another host writes into Redis is bounded as the
// file store's records are. A 40 MB state made `run` take 2.7s and 455 MB,
// and 100 MB of events made every read of them as large; a 5 MB reason was
// printed whole by history. Now the state is moved aside unread (one
// ERROR), the run runs, and history reads the newest 16 MiB of events and
// prints at most 200 bytes of any reason. The bound asserted is on peak
// resident memory (VmHWM), 100 MiB, whatever the machine's load; the times
// are logged beside a healthy run's.
func TestRedisRecordsFromAnotherHostAreBounded(t *testing.T) {
	srv := redistest.Start(t)
	home := t.TempDir()
	local := filepath.Join(home, "local-state")
	env := []string{"HOME=" + home, "STATE_DIRECTORY=" + local, "FUSEBOX_STATE_DIR=" + srv.URL()}
	run := func(args ...string) testenv.Proc {
		t.Helper()
		p, err := testenv.RunWatched(fbCmd(filepath.Join(home, "unused"), env, args...), nil)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var stdout, stderr strings.Builder
	watched := func(args ...string) testenv.Proc {
		t.Helper()
		stdout.Reset()
		stderr.Reset()
		cmd := fbCmd(filepath.Join(home, "unused"), env, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		p, err := testenv.RunWatched(cmd, nil)
		if err != nil {
			t.Fatal(err)
		}
		p.Stdout, p.Stderr = stdout.String(), stderr.String()
		return p
	}
	const limit = (100 << 20) * testenv.RaceMemory

	healthy := run("run", "ok", "--", "true")
	if healthy.Code != 0 {
		t.Fatalf("healthy run: exit %d", healthy.Code)
	}
	plantRedis(t, srv, `redis.call('HSET', KEYS[1], 'v', '3', 'state', string.rep('x', 40000000))`, []string{"fusebox:s:api"})
	p := watched("run", "api", "--", "true")
	t.Logf("run over a 40 MB state: exit %d, %s, peak %s (VmHWM), cpu %s; a healthy run: %s, peak %s, cpu %s",
		p.Code, p.Took.Round(time.Millisecond), mib(p.HWM), p.CPU.Round(time.Millisecond),
		healthy.Took.Round(time.Millisecond), mib(healthy.HWM), healthy.CPU.Round(time.Millisecond))
	if p.Code != 0 || p.HWM > limit {
		t.Errorf("run over a 40 MB state: exit %d, peak %s; want 0 and at most %s:\n%s", p.Code, mib(p.HWM), mib(limit), p.Stderr)
	}
	if strings.Count(p.Stderr, "level=ERROR") != 1 || !strings.Contains(p.Stderr, "redis=fusebox:s:api") {
		t.Errorf("want one ERROR naming the key moved aside, got:\n%s", p.Stderr)
	}

	// 100 MB of events, each near the 64 KiB an event may be, with
	// reasons of 61,440 bytes, and an outage among them.
	now := time.Now().UTC()
	plantRedis(t, srv, `
local function ev(t, kind, extra)
  return '{"time":"' .. t .. '","circuit":"api","kind":"' .. kind .. '"' .. extra .. ',"reason":"' .. string.rep('r', 61440) .. '"}'
end
redis.call('ZADD', KEYS[2], 1, 'api')
for i = 1, 1700 do redis.call('XADD', KEYS[1], '*', 'e', ev(ARGV[1], 'failure', ',"attempt":1')) end
redis.call('XADD', KEYS[1], '*', 'e', ev(ARGV[2], 'transition', ',"from":"closed","to":"open","for":"1m"'))
for i = 1, 3 do redis.call('XADD', KEYS[1], '*', 'e', ev(ARGV[3], 'failure', ',"attempt":1')) end
return 1`, []string{"fusebox:e:api", "fusebox:names"},
		now.Add(-3*time.Hour).Format(time.RFC3339), now.Add(-2*time.Hour).Format(time.RFC3339), now.Add(-time.Hour).Format(time.RFC3339))
	p = watched("history", "api", "--json")
	t.Logf("history over 104 MB of events: exit %d, %s, peak %s (VmHWM), %d bytes out", p.Code, p.Took.Round(time.Millisecond), mib(p.HWM), len(p.Stdout))
	if p.Code != 0 || p.HWM > limit {
		t.Errorf("history over 104 MB of events: exit %d, peak %s; want 0 and at most %s:\n%s", p.Code, mib(p.HWM), mib(limit), p.Stderr)
	}
	if !strings.Contains(p.Stdout, `"reason": "rrrr`) && !strings.Contains(p.Stdout, `"reason":"rrrr`) {
		t.Errorf("history shows no reason of the planted failures:\n%.2000s", p.Stdout)
	}
	if strings.Contains(p.Stdout, strings.Repeat("r", 200)) {
		t.Errorf("history printed 200 bytes or more of one reason:\n%.600s", p.Stdout)
	}
}

// plantRedis runs a Lua script on srv with time to spare: writing 100 MB takes
// a while on a loaded machine.
func plantRedis(t *testing.T, srv *redistest.Server, script string, keys []string, args ...any) {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), ReadTimeout: 5 * time.Minute})
	defer c.Close()
	if err := c.Eval(context.Background(), script, keys, args...).Err(); err != nil && err != goredis.Nil {
		t.Fatalf("plant: %v", err)
	}
}
