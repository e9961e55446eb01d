package testenv

import (
	_ "embed"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

//go:embed hatemplates.py
var haTemplatesPy string

// HATemplates is one scan of a Home Assistant command_line or RESTful
// sensor, for RenderAsHomeAssistant: the scan's value and the sensor's
// templates, and the order to render them in.
type HATemplates struct {
	Value          *string  `json:"stdout"` // a command's stdout or a resource's body, stripped; nil: the command failed
	ValueTemplate  string   `json:"value_template"`
	Availability   string   `json:"availability"`
	JSONAttributes []string `json:"json_attributes"`
	Order          string   `json:"order"` // HAOrders
}

// HAOrders are the orders in which Home Assistant's releases render a
// sensor's templates: value_template first and availability over its
// output (a command_line sensor's older releases), or availability first
// over the value (the current source, and every release's RESTful sensor).
// hatemplates.py says how each goes.
var HAOrders = []string{"value_first", "availability_first"}

// HARendered is what Home Assistant makes of one scan.
type HARendered struct {
	Available  bool           `json:"available"`
	State      any            `json:"state"` // the value_template's output; nil when not rendered
	Attributes map[string]any `json:"attributes"`
	Errors     []string       `json:"errors"`   // what Home Assistant logs as an ERROR
	Warnings   []string       `json:"warnings"` // and as a WARNING
}

// JinjaPython returns a python3 that imports Jinja2, Home Assistant's
// template engine, or skips the test.
func JinjaPython(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import jinja2").Run() == nil {
			return p
		}
	}
	Skip(t, "no python3 with Jinja2 (Debian: python3-jinja2) to render Home Assistant's templates")
	return ""
}

// RenderAsHomeAssistant renders the templates of q over its value with
// Jinja2, in q's order, as Home Assistant does (hatemplates.py).
func RenderAsHomeAssistant(t testing.TB, q HATemplates) HARendered {
	t.Helper()
	in, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(JinjaPython(t), "-c", haTemplatesPy)
	cmd.Stdin = strings.NewReader(string(in))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rendering the templates as Home Assistant does: %v\n%s", err, stderr.String())
	}
	var r HARendered
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("the renderer's answer %q: %v", out, err)
	}
	return r
}
