package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fusebox-hq/fusebox"
)

// WriteJSON prints e as one indented JSON object.
func WriteJSON(w io.Writer, e Explanation) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(e)
}

// WriteText prints e for a person: the verdict (a chain's, then each of
// its endpoints'), the state dir and config, then each policy in aligned
// columns. Times are local.
func WriteText(w io.Writer, e Explanation) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	verdict := func(x Explanation, indent string) {
		fmt.Fprintf(tw, "%s%s (%s): %s\n", indent, x.Name, x.Kind, sentence(x))
	}
	if e.Kind == "chain" {
		fmt.Fprintf(tw, "%s (chain): tries %s in order; an endpoint that would skip is passed over at once\n", e.Name, strings.Join(names(e.Endpoints), ", "))
		for _, x := range e.Endpoints {
			verdict(x, "  ")
		}
	} else {
		verdict(e, "")
		if e.Action == actionSkip && e.SkipExit != nil {
			fmt.Fprintf(tw, "  a run would exit %d without running its command; a call would try the next endpoint or fail\n", *e.SkipExit)
		}
		if w := e.Watched; w != nil {
			fmt.Fprintf(tw, "  watched over MQTT by fusebox serve: %s, up when %s (config %s:%d)\n", w.Topic, w.Up, w.File, w.Line)
		}
	}
	for _, x := range append([]Explanation{e}, e.Endpoints...) {
		if l := x.Longest; l != nil {
			indent := ""
			if x.Name != e.Name {
				indent = "  "
			}
			fmt.Fprintf(tw, "%slongest %s of %s: %s, %s\n", indent, callOrRun(x), x.Name, round(seconds(l.Seconds)), l.From)
			if l.ServeSeconds > 0 {
				fmt.Fprintf(tw, "%s  through fusebox serve: at most %s for a caller that declares no wait (X-Fusebox-Wait)\n", indent, round(seconds(l.ServeSeconds)))
			}
		}
	}
	fmt.Fprintf(tw, "\nstate\t%s\t%s\n", e.State.Value, e.State.Source)
	fmt.Fprintf(tw, "config\t%s\t%s\n", e.Config.Value, e.Config.Source)
	policies := []Explanation{e}
	if e.Kind == "chain" {
		policies = append(policies, e.Endpoints...)
	}
	for _, x := range policies {
		fmt.Fprintf(tw, "\npolicy of %s\n", x.Name)
		for _, v := range x.Policy {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", v.Key, v.Value, v.from())
		}
	}
	return tw.Flush()
}

func (v PolicyValue) from() string {
	from := v.Source
	switch v.Source {
	case "flag":
		from = "flag " + v.Flag
	case "config":
		from = fmt.Sprintf("config %s:%d (%s)", v.File, v.Line, v.ConfigKey)
	}
	if v.Learned != "" {
		from += "; " + v.Learned
	}
	return from
}

// sentence is what x would do, in words: "would skip until ...: why".
func sentence(x Explanation) string {
	switch x.Action {
	case actionRun:
		return "would run: " + x.Why
	case actionProbe:
		return "would probe: " + x.Why
	}
	if x.Until != nil {
		return "would skip until " + x.Until.Local().Format(time.TimeOnly) + ": " + x.Why
	}
	return "would skip: " + x.Why
}

func names(xs []Explanation) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x.Name)
	}
	return out
}

func callOrRun(x Explanation) string {
	if x.Kind == "circuit" {
		return "run"
	}
	return "call"
}

func seconds(s float64) time.Duration {
	if s >= fusebox.NoDeadline.Seconds() {
		return fusebox.NoDeadline
	}
	return time.Duration(s * float64(time.Second))
}
