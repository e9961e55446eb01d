package main

import (
	"slices"
	"strings"
)

// The glance section gathers every target row of the scenario sections as
// the report holds them, after a run has replaced its own: each row is the
// figure of the table it comes from, never a copy someone has to keep up.

// glance returns the body of the glance section of doc: the rows of every
// target table (a header with "target", "measured" and "verdict" columns)
// in the scenario sections named in order, then when each was measured.
func glance(doc string, order []string) string {
	var rows [][]string
	var when []string
	for _, name := range order {
		body, ok := sectionBody(doc, name)
		if !ok {
			continue
		}
		found := targetRows(body)
		for _, r := range found {
			rows = append(rows, append([]string{name}, r...))
		}
		if len(found) > 0 {
			when = append(when, "- "+name+": "+measuredLine(body))
		}
	}
	if len(rows) == 0 {
		return "No section below has a target table yet.\n"
	}
	var b strings.Builder
	b.WriteString("Every target row of the generated sections below, as they stand: a run rewrites this table with the sections it ran.\n\n")
	b.WriteString(mdTable([]string{"scenario", "target", "measured", "verdict"}, "llrl", rows))
	b.WriteString("\n" + strings.Join(when, "\n") + "\n")
	return b.String()
}

// sectionBody is what doc holds between the named section's markers.
func sectionBody(doc, name string) (string, bool) {
	begin, end := sectionMarkers(name)
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return "", false
	}
	return doc[i+len(begin) : j], true
}

// targetRows returns the target, measured and verdict cells of every row
// of the target tables in body; a contender column, when there is one,
// leads the target ("fusebox run: ≥5x fewer requests").
func targetRows(body string) [][]string {
	var rows [][]string
	lines := strings.Split(body, "\n")
	for i := 0; i < len(lines); i++ {
		head := tableCells(lines[i])
		target, measured, verdict, contender := slices.Index(head, "target"), slices.Index(head, "measured"), slices.Index(head, "verdict"), slices.Index(head, "contender")
		if target < 0 || measured < 0 || verdict < 0 || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "|--") {
			continue
		}
		for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			c := tableCells(lines[i])
			if len(c) != len(head) {
				continue
			}
			t := c[target]
			if contender >= 0 {
				t = c[contender] + ": " + t
			}
			rows = append(rows, []string{t, c[measured], c[verdict]})
		}
	}
	return rows
}

// tableCells splits a markdown table row into its cells, unescaping the
// "\|" mdTable writes for a bar inside a cell; nil for a line that is not
// a row.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	const bar = "\x00"
	line = strings.ReplaceAll(line[1:len(line)-1], `\|`, bar)
	cells := strings.Split(line, "|")
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(strings.TrimSpace(c), bar, "|")
	}
	return cells
}

// measuredLine is the section's "_Measured ..._" line without its
// underscores, or a note that it has none.
func measuredLine(body string) string {
	lines := strings.Split(strings.TrimSpace(body), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "_Measured ") {
			return strings.Trim(l, "_")
		}
	}
	return "when is not recorded"
}
