package config

//go:generate go run ./internal/genschema ../docs/fusebox.schema.json

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/fusebox-hq/fusebox"
)

// SchemaPath is where the repository keeps JSONSchema's output, relative to
// its root; `go generate ./config` writes it.
const SchemaPath = "docs/fusebox.schema.json"

// JSONSchema returns a JSON Schema (draft-07, the draft editors' YAML
// support speaks) of the config file, built from the key table the loader
// decodes with (keytable.go): each mapping allows only its keys,
// and each value is described as the loader reads it. What the schema
// cannot say (a chain naming a circuit that exists, a hedge shorter than
// its deadline, a !secret that secrets.yaml holds) is left to Parse, so
// that a config the schema refuses is one Parse refuses too.
func JSONSchema() []byte {
	root := table().top.schema()
	root.Draft = "http://json-schema.org/draft-07/schema#"
	root.ID = "https://raw.githubusercontent.com/fusebox-hq/fusebox/main/" + SchemaPath
	root.Title = "fusebox config"
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(root); err != nil {
		panic(fmt.Sprintf("config: encode the JSON Schema: %v", err)) // the table is code: a bad one is a bug
	}
	return b.Bytes()
}

// schema is one JSON Schema (draft-07), as much of it as the config needs.
type schema struct {
	Draft                string             `json:"$schema,omitempty"`
	ID                   string             `json:"$id,omitempty"`
	Title                string             `json:"title,omitempty"`
	Description          string             `json:"description,omitempty"`
	Type                 any                `json:"type,omitempty"` // a type or a list of them
	Enum                 []any              `json:"enum,omitempty"`
	Const                any                `json:"const,omitempty"`
	Pattern              string             `json:"pattern,omitempty"`
	MinLength            int                `json:"minLength,omitempty"`
	Minimum              *float64           `json:"minimum,omitempty"`
	ExclusiveMinimum     *float64           `json:"exclusiveMinimum,omitempty"`
	Maximum              *float64           `json:"maximum,omitempty"`
	Items                any                `json:"items,omitempty"` // a schema, or a list of them (a tuple)
	AdditionalItems      *schema            `json:"additionalItems,omitempty"`
	MinItems             int                `json:"minItems,omitempty"`
	UniqueItems          bool               `json:"uniqueItems,omitempty"`
	Properties           map[string]*schema `json:"properties,omitempty"`
	PropertyNames        *schema            `json:"propertyNames,omitempty"`
	AdditionalProperties any                `json:"additionalProperties,omitempty"` // false, or a schema
	Required             []string           `json:"required,omitempty"`
	Dependencies         map[string]any     `json:"dependencies,omitempty"`
	AllOf                []*schema          `json:"allOf,omitempty"`
	AnyOf                []*schema          `json:"anyOf,omitempty"`
	Not                  *schema            `json:"not,omitempty"`
	Default              any                `json:"default,omitempty"`
	Examples             []any              `json:"examples,omitempty"`
}

// schema is the JSON Schema of a mapping with b's keys and no others.
func (b *block) schema() *schema {
	s := &schema{
		Description:          b.doc,
		Type:                 []string{"object", "null"}, // null: an empty mapping
		Properties:           map[string]*schema{},
		AdditionalProperties: false,
		Required:             b.required,
	}
	for _, k := range b.keys {
		s.Properties[k.name] = k.schema()
		if k.needs != "" {
			if s.Dependencies == nil {
				s.Dependencies = map[string]any{}
			}
			s.Dependencies[k.name] = []string{k.needs}
		}
	}
	return s
}

// schema is the JSON Schema of k's value, with its description.
func (k key) schema() *schema {
	var alts []*schema
	if k.is != nil {
		alts = append(alts, k.is())
	}
	switch {
	case k.block != nil:
		alts = append(alts, k.block.schema())
	case k.each != nil:
		alts = append(alts, &schema{
			Type:                 []string{"object", "null"},
			PropertyNames:        nameSchema(),
			AdditionalProperties: k.each.schema(),
		})
	case k.items != nil:
		alts = append(alts, &schema{Description: k.items.doc, Type: "array", Items: k.items.schema()})
	}
	s := alts[0]
	if len(alts) > 1 {
		s = &schema{AnyOf: alts}
	}
	s.Description = strings.TrimSpace(k.doc + "\n\n" + s.Description)
	s.Default = k.def
	return s
}

// The kinds of value the loader reads, as it reads them.

// text is a free-text value (l.str) or a name (l.text): any scalar, which
// the loader reads as its text; in a free-text value ${VAR} expands, and the
// whole value may be !secret NAME.
func text() *schema { return &schema{Type: []string{"string", "number", "boolean"}} }

// textMatching is text whose written form, when a string, matches pattern.
func textMatching(pattern string) *schema {
	s := text()
	s.Pattern = pattern
	return s
}

func boolean() *schema { return &schema{Type: "boolean"} }

// integer is a whole number from min to max (nil: no bound).
func integer(min, max *float64) *schema { return &schema{Type: "integer", Minimum: min, Maximum: max} }

func num(v float64) *float64 { return &v }

// oneOfNames is a string among names (an enum).
func oneOfNames[T ~string](names []T) *schema {
	s := &schema{Type: "string"}
	for _, n := range names {
		s.Enum = append(s.Enum, string(n))
	}
	return s
}

// space is a character strings.TrimSpace trims, as a pattern's character
// class of the characters themselves (the one spelling of them both Go's
// and ECMAScript's regular expressions read alike).
func space() string {
	var b strings.Builder
	b.WriteString("[")
	for _, r := range unicode.White_Space.R16 {
		for c := r.Lo; c <= r.Hi; c += r.Stride {
			b.WriteRune(rune(c))
		}
	}
	b.WriteString("]")
	return b.String()
}

// A duration as the loader reads it: ParseDuration (Go's units and d for 24
// hours, one or more numbers each with a unit, or a bare 0) of the text
// less surrounding space. A minus goes only before numbers of less than one
// of their unit, as a negative duration that rounds to 0 is the one the
// parser takes: the schema takes them all, and refuses -5s.
const (
	durationNumber = `([0-9]+(\.[0-9]*)?|\.[0-9]+)`
	durationUnit   = `(ns|us|µs|μs|ms|s|m|h|d)`
)

func durationPattern() string {
	return "^" + space() + `*(\+?(0|(` + durationNumber + durationUnit + `)+)|-(0|((0+(\.[0-9]*)?|\.[0-9]+)` + durationUnit + `)+))` + space() + "*$"
}

// duration is a duration (ParseDuration), 0 included: the YAML integer 0
// reads as "0".
func duration() *schema {
	return &schema{
		Description: "A duration: a number and a unit (ns, us, ms, s, m, h, d for 24h), like 30s, 1h30m or 7d.",
		AnyOf: []*schema{
			{Type: "string", Pattern: durationPattern()},
			{Const: 0},
		},
	}
}

// positive is a duration more than 0 (l.positive): one with a digit that is
// not 0 somewhere in it.
func positive() *schema {
	s := duration()
	s.Description = "A duration more than 0: a number and a unit (ns, us, ms, s, m, h, d for 24h), like 30s, 1h30m or 7d."
	s.AnyOf = s.AnyOf[:1] // not the integer 0
	s.Not = &schema{Pattern: `^[^1-9]*$`}
	return s
}

// sizePattern is a byte size more than 0, as parseSize reads it.
func sizePattern() string {
	units := make([]string, len(sizeUnits))
	for i, u := range sizeUnits {
		units[i] = u.name
	}
	return `^\+?0*[1-9][0-9]*( *(` + strings.Join(units, "|") + `))?$`
}

// size is a byte size more than 0 (maxBody).
func size() *schema {
	return &schema{
		Description: "A size in bytes, more than 0: a whole number with an optional unit (B, KiB, MiB, GiB, KB, MB, GB), like 10MiB.",
		AnyOf: []*schema{
			{Type: "integer", Minimum: num(1)},
			{Type: "string", Pattern: sizePattern()},
		},
	}
}

// percentPattern is a share written as a percentage, as threshold reads
// it: a number strconv.ParseFloat reads (with _ between digits, and
// hexadecimal ones), space around it, then %.
func percentPattern() string {
	const dec, hex = `[0-9](_?[0-9])*`, `[0-9a-fA-F](_?[0-9a-fA-F])*`
	return "^" + space() + `*[+-]?((` + dec + `(\.(` + dec + `)?)?|\.` + dec + `)([eE][+-]?` + dec + `)?` +
		`|0[xX](_?` + hex + `(\.(` + hex + `)?)?|\.` + hex + `)[pP][+-]?` + dec + `)` + space() + "*%$"
}

// share is a share (threshold) as a fraction or a percentage; fraction says
// which fractions.
func share(fraction *schema) *schema {
	fraction.Type = "number"
	return &schema{
		Description: "A share: a percentage like 50% or a fraction like 0.5.",
		AnyOf:       []*schema{{Type: "string", Pattern: percentPattern()}, fraction},
	}
}

// namePattern is the form of a name (fusebox.ValidateName), but "." and
// "..", which it refuses too.
func namePattern() string { return fmt.Sprintf(`^[A-Za-z0-9._-]{1,%d}$`, fusebox.MaxNameLen) }

// nameSchema is a circuit's or chain's name (fusebox.ValidateName).
func nameSchema() *schema {
	return &schema{
		Type:    "string",
		Pattern: namePattern(),
		Not:     &schema{Enum: []any{".", ".."}},
	}
}

// anyCase is a pattern matching each of words, upper-case ASCII, in any
// spelling strings.ToUpper turns into it, as method reads them.
func anyCase(words []string) string {
	var alts []string
	for _, w := range words {
		var b strings.Builder
		for _, r := range w {
			if lo := unicode.ToLower(r); lo != r {
				b.WriteString("[" + string(r) + string(lo) + upperToASCII(r) + "]")
			} else {
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		alts = append(alts, b.String())
	}
	return "^(" + strings.Join(alts, "|") + ")$"
}

// upperToASCII returns the letters beyond ASCII that unicode.ToUpper turns
// into the ASCII letter r (a test looks through every rune for more).
func upperToASCII(r rune) string {
	switch r {
	case 'I':
		return "ı"
	case 'S':
		return "ſ"
	}
	return ""
}

// formatDuration writes d as a config would: 30s, 5m, 7d.
func formatDuration(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
