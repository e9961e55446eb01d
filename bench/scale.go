package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/fusebox-hq/fusebox"
)

// cronMinute is what one tick of the storm stands for: cron and systemd
// timers fire jobs every minute, so every policy is written in minutes'
// worth of real time and scaled down by the same factor.
const cronMinute = time.Minute

// The classic bash pattern's policy, as issue 5 describes it: 3 attempts,
// waits of 2 s then 4 s plus 0–2 s of jitter, and a 300 s open window. The
// script (scripts/classic-breaker.sh) holds these numbers itself and divides
// them by CB_SCALE; they are here for the report.
const (
	bashAttempts = 3
	bashWindow   = 300 * time.Second
)

// Scale maps cron-world durations onto real time: one Tick of real time
// stands for one cron minute. It is a pure value, safe to copy.
type Scale struct {
	Tick time.Duration
}

// Validate reports a tick that cannot scale every contender the same way: the
// bash script divides by an integer factor, so a minute must be a whole
// number of ticks.
func (s Scale) Validate() error {
	if s.Tick <= 0 || s.Tick > cronMinute || cronMinute%s.Tick != 0 {
		return fmt.Errorf("tick %s: a minute must be a whole number of ticks (like 1s, 500ms, 250ms)", s.Tick)
	}
	return nil
}

// Factor is how many times faster than the cron world the storm runs: 60
// for a 1 s tick.
func (s Scale) Factor() int64 { return int64(cronMinute / s.Tick) }

// Of scales a cron-world duration to real time, to the microsecond.
func (s Scale) Of(d time.Duration) time.Duration {
	return time.Duration(float64(d) / float64(s.Factor())).Round(time.Microsecond)
}

// FuseboxFlags are the policy flags that give `fusebox run` and `fusebox
// call` the classic script's attempts, first wait and open window, and
// fusebox's own defaults for everything else, all scaled. open_for is the
// bash window, so both contenders stay away equally long after a failure;
// open_max (5 m by default) is the same 300 s, so probes never wait longer.
func (s Scale) FuseboxFlags() []string {
	d := fusebox.Policy{}.WithDefaults()
	flag := func(name string, v time.Duration) string { return "--" + name + "=" + v.String() }
	return []string{
		"--attempts=" + strconv.Itoa(bashAttempts),
		flag("backoff", s.Of(d.Retry.Backoff.First)),
		flag("max-delay", s.Of(d.Retry.Backoff.Max)),
		flag("timeout", s.Of(d.Retry.Timeout)),
		flag("deadline", s.Of(d.Retry.Deadline)),
		"--trip-after=" + strconv.Itoa(d.Breaker.TripAfter),
		flag("open-for", s.Of(bashWindow)),
		flag("open-max", s.Of(d.Breaker.OpenMax)),
	}
}

// FaketimeRate is libfaketime's FAKETIME value that runs a program's clock
// and sleeps Factor times faster: how curl's whole-second --retry waits are
// scaled.
func (s Scale) FaketimeRate() string { return "+0 x" + strconv.FormatInt(s.Factor(), 10) }

// FuseboxConfig is a config with one endpoint, upstream, at url, under the
// policy of FuseboxFlags; with health above 0 the daemon health-checks it
// that often.
func (s Scale) FuseboxConfig(url string, health time.Duration) string {
	d := fusebox.Policy{}.WithDefaults()
	cfg := fmt.Sprintf(`circuits:
  upstream:
    attempts: %d
    backoff: %s
    max_delay: %s
    deadline: %s
    trip_after: %d
    open_for: %s
    open_max: %s
    http:
      url: %q
      timeout: %s
`, bashAttempts, s.Of(d.Retry.Backoff.First), s.Of(d.Retry.Backoff.Max), s.Of(d.Retry.Deadline),
		d.Breaker.TripAfter, s.Of(bashWindow), s.Of(d.Breaker.OpenMax), url, s.Of(d.Retry.Timeout))
	if health > 0 {
		cfg += fmt.Sprintf("      health: {interval: %s}\n", health)
	}
	return cfg
}
