package fusebox_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fusebox-hq/fusebox"
	"github.com/fusebox-hq/fusebox/mem"
)

func TestDoCutsAnAttemptAtItsDeadline(t *testing.T) {
	type ctxKey struct{}
	for _, tc := range []struct {
		name              string
		timeout, deadline time.Duration
		callers           time.Duration // the caller's context's timeout; 0: none
		want              string        // the attempt's error: what cut it, if anything did
		wantCallersCtx    bool          // fn runs with the caller's context itself
	}{
		{"the attempt timeout cuts it", time.Second, time.Minute, 0, "timeout after 1s: context deadline exceeded", false},
		{"the policy's deadline cuts it", time.Minute, time.Second, 0, "deadline of 1s reached: context deadline exceeded", false},
		{"the caller's sooner deadline cuts it, in the caller's own context", time.Minute, time.Hour, time.Second, "deadline reached: context deadline exceeded", true},
		{"a sooner timeout than the caller's deadline cuts it", time.Second, time.Hour, time.Minute, "timeout after 1s: context deadline exceeded", false},
		{"without any deadline, fn runs in the caller's own context", fusebox.NoDeadline, fusebox.NoDeadline, 0, "refused", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := fusebox.New(mem.New(), fusebox.WithPolicy(fusebox.Policy{
					Retry: fusebox.RetryPolicy{Attempts: 1, Timeout: tc.timeout, Deadline: tc.deadline},
				}))
				ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
				if tc.callers > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.callers)
					defer cancel()
				}
				err := c.Do(ctx, "cut", func(actx context.Context) error {
					if got := actx == ctx; got != tc.wantCallersCtx {
						t.Errorf("fn ran in the caller's own context: %t, want %t", got, tc.wantCallersCtx)
					}
					if actx.Value(ctxKey{}) != "caller" {
						t.Error("fn's context lost the caller's values")
					}
					if tc.want == "refused" {
						return errors.New("refused")
					}
					<-actx.Done()
					return actx.Err()
				})
				var ee *fusebox.ExhaustedError
				if !errors.As(err, &ee) || ee.Err == nil {
					t.Fatalf("Do = %v, want an *ExhaustedError with the attempt's error", err)
				}
				if ee.Err.Error() != tc.want {
					t.Errorf("the attempt's error is %q, want %q (%v)", ee.Err.Error(), tc.want, err)
				}
			})
		})
	}
}
