package file

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/fusebox-hq/fusebox"
)

// decodeState decodes a state file as json.Unmarshal into a zero
// fusebox.State does, without encoding/json: its first decode in a process
// builds the type's field tables by reflection, about 0.1 ms and 30 page
// faults of every fail-fast run, for a document of a dozen keys. It takes
// the documents Update writes (json.MarshalIndent of a State) and reports
// false for anything else it is not sure to decode exactly as encoding/json
// does: a key not spelled as Update writes it or given twice, null, a number
// with a fraction or an exponent, a string with invalid UTF-8 or a
// surrogate escape, a time or duration that does not parse. The caller then
// decodes with encoding/json, whose errors and results stay the reference
// (FuzzDecodeState compares the two).
func decodeState(b []byte) (fusebox.State, bool) {
	d := stateDecoder{b: b}
	var st fusebox.State
	ok := d.object(func(key string) bool { return d.stateField(&st, key) })
	if !ok {
		return fusebox.State{}, false
	}
	d.space()
	return st, d.i == len(d.b)
}

// stateDecoder reads JSON from b at i.
type stateDecoder struct {
	b    []byte
	i    int
	seen uint32 // the keys of the object being read, as fieldBit bits
}

// fieldBit is the bit of a State's, a Lease's or an Instant's key in a seen
// set; 0 for any other key. A switch, not a map: a map would be built at
// every start of the process, in the package's init.
func fieldBit(key string) uint32 {
	switch key {
	case "name":
		return 1 << 0
	case "state":
		return 1 << 1
	case "generation":
		return 1 << 2
	case "consecutive_failures":
		return 1 << 3
	case "recent":
		return 1 << 4
	case "failing_since":
		return 1 << 5
	case "opened_at":
		return 1 << 6
	case "open_period":
		return 1 << 7
	case "open_until":
		return 1 << 8
	case "reopens":
		return 1 << 9
	case "probes":
		return 1 << 10
	case "last_failure_at":
		return 1 << 11
	case "last_failure":
		return 1 << 12
	case "updated_at":
		return 1 << 13
	case "id":
		return 1 << 14
	case "granted":
		return 1 << 15
	case "for":
		return 1 << 16
	case "wall":
		return 1 << 17
	case "boot":
		return 1 << 18
	case "boottime_ns":
		return 1 << 19
	}
	return 0
}

func (d *stateDecoder) stateField(st *fusebox.State, key string) bool {
	switch key {
	case "name":
		return d.str(&st.Name)
	case "state":
		var s string
		ok := d.str(&s)
		st.Phase = fusebox.Phase(s)
		return ok
	case "generation":
		return d.uint(&st.Generation)
	case "consecutive_failures":
		return d.int(&st.ConsecutiveFailures)
	case "recent":
		return d.str(&st.Recent)
	case "failing_since":
		return d.time(&st.FailingSince)
	case "opened_at":
		return d.instant(&st.OpenedAt)
	case "open_period":
		return d.duration(&st.OpenPeriod)
	case "open_until":
		return d.time(&st.OpenUntil)
	case "reopens":
		return d.int(&st.Reopens)
	case "probes":
		return d.leases(&st.Probes)
	case "last_failure_at":
		return d.time(&st.LastFailureAt)
	case "last_failure":
		return d.str(&st.LastFailure)
	case "updated_at":
		return d.time(&st.UpdatedAt)
	}
	return false
}

func (d *stateDecoder) instant(in *fusebox.Instant) bool {
	return d.object(func(key string) bool {
		switch key {
		case "wall":
			return d.time(&in.Wall)
		case "boot":
			return d.str(&in.Boot)
		case "boottime_ns":
			var n int64
			ok := d.int64(&n)
			in.BootTime = time.Duration(n)
			return ok
		}
		return false
	})
}

func (d *stateDecoder) leases(ls *[]fusebox.Lease) bool {
	d.space()
	if !d.byte('[') {
		return false
	}
	*ls = []fusebox.Lease{} // as encoding/json leaves "[]": empty, not nil
	d.space()
	if d.byte(']') {
		return true
	}
	for {
		var l fusebox.Lease
		ok := d.object(func(key string) bool {
			switch key {
			case "id":
				return d.str(&l.ID)
			case "granted":
				return d.instant(&l.Granted)
			case "for":
				return d.duration(&l.For)
			}
			return false
		})
		if !ok {
			return false
		}
		*ls = append(*ls, l)
		d.space()
		if d.byte(']') {
			return true
		}
		if !d.byte(',') {
			return false
		}
	}
}

// object reads an object, calling field for each key with the decoder at
// its value; a key given twice is refused.
func (d *stateDecoder) object(field func(key string) bool) bool {
	d.space()
	if !d.byte('{') {
		return false
	}
	outer := d.seen
	d.seen = 0
	defer func() { d.seen = outer }()
	d.space()
	if d.byte('}') {
		return true
	}
	for {
		var key string
		if !d.str(&key) {
			return false
		}
		bit := fieldBit(key)
		if bit == 0 || d.seen&bit != 0 {
			return false
		}
		d.seen |= bit
		d.space()
		if !d.byte(':') || !field(key) {
			return false
		}
		d.space()
		if d.byte('}') {
			return true
		}
		if !d.byte(',') {
			return false
		}
		d.space()
	}
}

func (d *stateDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *stateDecoder) byte(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// rawString returns the string literal at i, quotes included, escapes
// undecoded; simple reports that it holds no escape.
func (d *stateDecoder) rawString() (raw []byte, simple, ok bool) {
	d.space()
	if !d.byte('"') {
		return nil, false, false
	}
	start, simple := d.i-1, true
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '"':
			d.i++
			return d.b[start:d.i], simple, true
		case c == '\\':
			simple = false
			d.i += 2 // the escape's letter; \u's digits are checked by unescape
		case c < 0x20:
			return nil, false, false // invalid JSON
		default:
			d.i++
		}
	}
	return nil, false, false
}

// str reads a string into s.
func (d *stateDecoder) str(s *string) bool {
	raw, simple, ok := d.rawString()
	if !ok {
		return false
	}
	body := raw[1 : len(raw)-1]
	if simple {
		if !utf8.Valid(body) { // encoding/json replaces invalid bytes with U+FFFD
			return false
		}
		*s = string(body)
		return true
	}
	return unescape(body, s)
}

// unescape decodes a string literal's body with escapes in it, refusing
// what it cannot be sure of: invalid UTF-8 and \u escapes of surrogates.
func unescape(body []byte, s *string) bool {
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); {
		c := body[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(body) {
			return false
		}
		switch body[i+1] {
		case '"', '\\', '/':
			out = append(out, body[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if i+6 > len(body) {
				return false
			}
			r, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 32)
			if err != nil || body[i+2] == '+' || (r >= 0xd800 && r < 0xe000) {
				return false
			}
			out = utf8.AppendRune(out, rune(r))
			i += 6
			continue
		default:
			return false
		}
		i += 2
	}
	if !utf8.Valid(out) {
		return false
	}
	*s = string(out)
	return true
}

// time reads a time as time.Time's UnmarshalJSON does: encoding/json hands
// it the literal as it is, escapes and all.
func (d *stateDecoder) time(t *time.Time) bool {
	raw, _, ok := d.rawString()
	return ok && t.UnmarshalJSON(raw) == nil
}

// duration reads a fusebox.Duration as its UnmarshalJSON does: a Go
// duration string or a number of nanoseconds.
func (d *stateDecoder) duration(v *fusebox.Duration) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] != '"' {
		var n int64
		ok := d.int64(&n)
		*v = fusebox.Duration(n)
		return ok
	}
	var s string
	if !d.str(&s) {
		return false
	}
	p, err := time.ParseDuration(s)
	*v = fusebox.Duration(p)
	return err == nil
}

// digits returns the integer literal at i: an optional minus (when signed)
// and digits without a leading zero, followed by no fraction or exponent.
func (d *stateDecoder) digits(signed bool) (string, bool) {
	d.space()
	start := d.i
	if signed && d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	first := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.i - first
	if n == 0 || n > 1 && d.b[first] == '0' {
		return "", false
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case '.', 'e', 'E', '-', '+':
			return "", false
		}
	}
	return string(d.b[start:d.i]), true
}

func (d *stateDecoder) uint(v *uint64) bool {
	s, ok := d.digits(false)
	if !ok {
		return false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	*v = n
	return err == nil
}

func (d *stateDecoder) int(v *int) bool {
	s, ok := d.digits(true)
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(s, 10, strconv.IntSize)
	*v = int(n)
	return err == nil
}

func (d *stateDecoder) int64(v *int64) bool {
	s, ok := d.digits(true)
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	*v = n
	return err == nil
}
