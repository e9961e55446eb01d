package fusebox_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/mem"
)

func ExampleCircuits_Do() {
	circuits := fusebox.New(mem.New(), fusebox.WithPolicy(fusebox.Policy{
		Retry: fusebox.RetryPolicy{
			Attempts: 3,
			Backoff:  fusebox.Backoff{First: time.Millisecond, Jitter: fusebox.JitterNone},
		},
		Breaker: breaker.Policy{TripAfter: 3, OpenFor: 30 * time.Second},
	}))
	ctx := context.Background()

	// A flaky endpoint: the third attempt gets through.
	attempts := 0
	err := circuits.Do(ctx, "inventory", func(ctx context.Context) error {
		attempts++
		if attempts < 3 {
			return errors.New("connection refused")
		}
		return nil
	})
	fmt.Printf("flaky: %v after %d attempts\n", err, attempts)

	// An endpoint that is down: three failures in a row open the circuit...
	err = circuits.Do(ctx, "inventory", func(ctx context.Context) error {
		return errors.New("connection refused")
	})
	fmt.Println("down:", err)

	// ...and from then on calls fail fast, without running.
	err = circuits.Do(ctx, "inventory", func(ctx context.Context) error {
		panic("not called while the circuit is open")
	})
	fmt.Println("open:", err)
	fmt.Println("errors.Is(err, breaker.ErrOpen):", errors.Is(err, breaker.ErrOpen))

	// Output:
	// flaky: <nil> after 3 attempts
	// down: inventory: attempts exhausted after 3 attempts: connection refused
	// open: circuit inventory is open (probe in 30s)
	// errors.Is(err, breaker.ErrOpen): true
}

func ExampleBackoff_Delay() {
	b := fusebox.Backoff{First: time.Second, Multiplier: 2, Max: 10 * time.Second}
	// Delay is a pure function of the random draw: with a draw of 0.5, full
	// jitter waits half the exponential delay (no jitter's) and equal jitter
	// three quarters.
	none, equal := b, b
	none.Jitter, equal.Jitter = fusebox.JitterNone, fusebox.JitterEqual
	for attempt := 1; attempt <= 5; attempt++ {
		fmt.Printf("after attempt %d: exp %-3s full %-4s equal %s\n",
			attempt, none.Delay(attempt, 0, 0.5), b.Delay(attempt, 0, 0.5), equal.Delay(attempt, 0, 0.5))
	}
	// Output:
	// after attempt 1: exp 1s  full 500ms equal 750ms
	// after attempt 2: exp 2s  full 1s   equal 1.5s
	// after attempt 3: exp 4s  full 2s   equal 3s
	// after attempt 4: exp 8s  full 4s   equal 6s
	// after attempt 5: exp 10s full 5s   equal 7.5s
}

// ExamplePolicy is the library example of docs/library.md: retries and their backoff
// nest in Retry, the breaker in Breaker, and a field left zero is the
// default.
func ExamplePolicy() {
	policy := fusebox.Policy{
		Retry: fusebox.RetryPolicy{
			Attempts: 4, // in all, the first included
			Backoff: fusebox.Backoff{
				First:      2 * time.Second, // the wait before the first retry
				Multiplier: 2,
				Max:        30 * time.Second,
				Jitter:     fusebox.JitterFull,
			},
			Timeout:  10 * time.Second, // per attempt
			Deadline: time.Minute,      // the whole call, waits included
		},
		Breaker: breaker.Policy{
			TripAfter: 3,               // consecutive failed attempts, from any process
			OpenFor:   3 * time.Minute, // then doubling at each failed probe
			OpenMax:   10 * time.Minute,
		},
	}
	if err := policy.Validate(); err != nil {
		fmt.Println("invalid:", err)
		return
	}
	p := policy.WithDefaults()
	fmt.Println("attempts:", p.Retry.Attempts, "open for:", p.Breaker.OpenFor, "probes (the default):", p.Breaker.Probes)
	for attempt := 1; attempt < p.Retry.Attempts; attempt++ {
		fmt.Printf("wait before retry %d: up to %s\n", attempt, p.Retry.Backoff.Delay(attempt, 0, 1)) // full jitter's top draw
	}

	store := mem.New() // or file.Open("/var/lib/fusebox"), or redis.Open("redis://nas.lan:6379/0")
	circuits := fusebox.New(store, fusebox.WithPolicy(policy))
	err := circuits.Do(context.Background(), "zigbee2mqtt", func(ctx context.Context) error {
		return nil // pingBridge(ctx)
	})
	fmt.Println("call:", err)

	fmt.Println(fusebox.Policy{Breaker: breaker.Policy{OpenMax: 15 * time.Second}}.Validate())
	// Output:
	// attempts: 4 open for: 3m0s probes (the default): 1
	// wait before retry 1: up to 2s
	// wait before retry 2: up to 4s
	// wait before retry 3: up to 8s
	// call: <nil>
	// open_max: must be at least open_for (30s, the default), got 15s
}
