package httpcall

import (
	"context"
	"testing"

	"github.com/itchyny/gojq"
)

// TestSmallSteps: the programs people write to check and extract an answer
// run in-process; a program with a step that could allocate any amount in
// one go runs in a child.
func TestSmallSteps(t *testing.T) {
	for _, tt := range []struct {
		src   string
		small bool
	}{
		{".main.temp", true},
		{".current_condition[0].temp_C | tonumber", true},
		{".ok == true and (.items | length) > 0", true},
		{".main.temp != null", true},
		{"[.[] | select(.on) | {id, name: .n}] | length", true},
		{".temp * 1.8 + 32", true},
		{"(.temp - 273.15) / 2 | floor", true},
		{".data.value // empty", true},
		{". as {a: $x, b: [$y]} | $x", true},
		{"[range(1e12)] | length", true}, // grows one append at a time
		{"reduce .[] as $x (0; . + 1)", true},
		{`if .s | test("^ok") then .v else .w end`, true},
		{`try .a catch "none"`, true},
		{`.a + .b`, false},  // two strings or arrays: a copy of both in one step
		{`.s * 1e9`, false}, // a string repeated
		{`.s * 2`, false},   // twice a body-sized string
		{`reduce range(40) as $i ("x"; . + .)`, false},
		{`def f: .; f`, false},
		{`.[500000000] = 1`, false},
		{`.a |= 1`, false},
		{`"\(.temp) °C"`, false},
		{`@base64`, false},
		{`.s | split("")`, false},
		{`tostring`, false},
		{`[.[] | {(.k): 1}]`, true},
		{`.[] as [$a] | {(tostring): $a}`, false},
	} {
		q, err := gojq.Parse(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		if got := smallSteps(q); got != tt.small {
			t.Errorf("smallSteps(%s) = %v, want %v", tt.src, got, tt.small)
		}
	}
}

// TestJQInAChildAnswersAsInProcess: a program run in its child process
// gives the outputs, and the errors, it gives in-process.
func TestJQInAChildAnswersAsInProcess(t *testing.T) {
	body := []byte(`{"temp": 21.5, "s": "tschüß", "items": [1, 2.50, 10000000000000000000001], "ok": true, "o": {"b": null, "a": [true]}}`)
	v, err := decodeJSON(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		`.temp`, `.s`, `.items[]`, `.o`, `"\(.temp) °C"`, `.s + "!" | ascii_upcase`, `.items | add`,
		`.temp.x`, `error("broken")`, `empty`, `halt`, `range(200000)`, `[range(300000)] | tostring`, `false, true`,
	} {
		p, err := compileJQ(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, asExtract := range []bool{true, false} {
			in, inErr := render(context.Background(), p.code, v, asExtract, 1<<20)
			child, childErr := inChild(context.Background(), src, body, asExtract, 1<<20)
			if string(in) != string(child) || errText(inErr) != errText(childErr) {
				t.Errorf("%s (extract %v): in-process %q, %v; in a child %q, %v", src, asExtract, in, inErr, child, childErr)
			}
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzJSONSize: jsonSize is the length of gojq's JSON text, or, once past
// its budget, a number past it.
func FuzzJSONSize(f *testing.F) {
	for _, s := range []string{`null`, `[1,2.5,"a\"b\\c\u0001\u007f"]`, `{"é":{"x":[]},"\n":true}`, `"\ud800 tschüß"`, `1e1000`, `123456789012345678901234567890`} {
		f.Add([]byte(s), int64(1000))
	}
	f.Fuzz(func(t *testing.T, b []byte, budget int64) {
		v, err := decodeJSON(b)
		if err != nil {
			return
		}
		// As gojq hands values to results: numbers normalized.
		iter := mustCompile(t, ".").Run(v)
		x, _ := iter.Next()
		if _, ok := x.(error); ok {
			return
		}
		text, _ := gojq.Marshal(x)
		want := int64(len(text))
		got := jsonSize(x, budget)
		if want <= budget && got != want || want > budget && got <= budget {
			t.Fatalf("jsonSize(%s, %d) = %d, want %d", text, budget, got, want)
		}
	})
}

func mustCompile(t *testing.T, src string) *gojq.Code {
	p, err := compileJQ(src)
	if err != nil {
		t.Fatal(err)
	}
	return p.code
}
