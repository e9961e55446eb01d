package httpcall_test

import (
	"context"
	"testing"

	"github.com/fusebox-hq/fusebox/httpcall"
)

func TestConditionJudgesJSONAndText(t *testing.T) {
	for _, tc := range []struct {
		name, src, msg string
		want, fails    bool
	}{
		{"json holds", `.state == "online"`, `{"state":"online"}`, true, false},
		{"json does not hold", `.state == "online"`, `{"state":"offline"}`, false, false},
		{"text is a JSON string", `. == "online"`, `online`, true, false},
		{"text that is not the string", `. == "online"`, `offline`, false, false},
		{"indexing text fails", `.state == "online"`, `offline`, false, true},
		{"null is not up", `.missing`, `{}`, false, false},
		{"numbers stay exact", `.n == 12345678901234567890`, `{"n":12345678901234567890}`, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, err := httpcall.CompileJQ(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			c, err := httpcall.NewCondition(up)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Holds(context.Background(), []byte(tc.msg))
			if got != tc.want || (err != nil) != tc.fails {
				t.Fatalf("Holds(%q) = %v, %v; want %v, failing %v", tc.msg, got, err, tc.want, tc.fails)
			}
		})
	}
}
