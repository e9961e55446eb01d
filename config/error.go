package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/token"
)

// Error is one problem in a config file. Parse and Load return every problem
// they find joined with errors.Join, so use errors.As to get the first, or
// the Unwrap() []error of the joined error to get them all.
type Error struct {
	File      string
	Line, Col int    // 1-based; 0 when the problem has no place in the file
	Key       string // dotted path, like circuits.zigbee2mqtt.open_for; "" for YAML syntax errors
	Msg       string
}

// Error returns "FILE:LINE:COL: KEY: MSG" on one line.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		if e.File != "" {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Col))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return oneLine.Replace(b.String())
}

var oneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// problems collects every *Error found while loading one config.
type problems struct{ list []*Error }

// add records a problem at tok (nil: no place) under key.
func (p *problems) add(file string, tok *token.Token, key, format string, args ...any) {
	e := &Error{File: file, Key: key, Msg: fmt.Sprintf(format, args...)}
	if tok != nil && tok.Position != nil {
		e.Line, e.Col = tok.Position.Line, tok.Position.Column
	}
	p.list = append(p.list, e)
}

// hasKey reports whether a problem was reported under key.
func (p *problems) hasKey(key string) bool {
	for _, e := range p.list {
		if e.Key == key {
			return true
		}
	}
	return false
}

// err returns the problems in file order, each once, joined; nil when there
// are none. (A node read twice, such as an alias naming no anchor, reports
// its problem twice.)
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	slices.SortStableFunc(p.list, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	var errs []error
	seen := map[Error]bool{}
	for _, e := range p.list {
		if !seen[*e] {
			seen[*e] = true
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}
