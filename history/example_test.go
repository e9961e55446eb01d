package history_test

import (
	"fmt"
	"time"

	"github.com/fusebox-hq/fusebox/breaker"
	"github.com/fusebox-hq/fusebox/history"
)

func ExampleOutages() {
	t0 := time.Date(2026, 3, 1, 6, 15, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	fail := func(s int) breaker.Event {
		return breaker.Event{Time: at(s), Circuit: "bridge", Kind: breaker.EventFailure, Reason: "connection refused"}
	}
	events := []breaker.Event{ // as Store.AllEvents returns them
		fail(0), fail(5), fail(10),
		{Time: at(10), Circuit: "bridge", Kind: breaker.EventTransition, From: breaker.Closed, To: breaker.Open, Since: at(0), Skips: 40},
		{Time: at(900), Circuit: "bridge", Kind: breaker.EventTransition, From: breaker.HalfOpen, To: breaker.Closed, Reason: "probe succeeded", Since: at(0), Skips: 52},
	}
	outages, _ := history.Outages(events, nil, at(3600))
	for _, o := range outages {
		fmt.Printf("%s down %s to %s from %s, %d× %s, %d calls skipped saving %s\n",
			o.Circuit, o.DownAtLeast(), o.Duration, o.Start.Format("15:04"), o.Reasons[0].Count, o.Reasons[0].Reason, o.Skips, o.Saved)
	}
	// Output:
	// bridge down 10s to 15m0s from 06:15, 3× connection refused, 12 calls skipped saving 36s
}
