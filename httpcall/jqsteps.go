package httpcall

import (
	"math"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"
)

// smallSteps reports whether every step of q allocates no more than a small
// multiple of a value it is handed: it only walks paths, compares, binds
// and builds arrays and objects of the values it has, and calls builtins
// of smallStepFuncs. Memory can then grow only one output, one append, at a
// time, where a watcher of the heap sees it coming, and such a program runs
// in-process. A program failing the test is not wrong: it may hold a step
// that allocates gigabytes in one instruction (`"x" * 1e9`, `. + .` on a
// large string, `split("")`, `setpath([5e8]; 1)`), which no watcher can stop
// half-way, so it runs in a memory-limited child process instead. The test
// is syntactic and conservative: it only admits what it knows.
func smallSteps(q *gojq.Query) bool {
	if q == nil {
		return true
	}
	if len(q.Imports) > 0 || len(q.FuncDefs) > 0 {
		return false // user functions could shadow the builtins below
	}
	if !smallPatterns(q.Patterns) {
		return false
	}
	switch q.Op {
	case 0, gojq.OpPipe, gojq.OpComma, gojq.OpAlt, gojq.OpAnd, gojq.OpOr,
		gojq.OpEq, gojq.OpNe, gojq.OpGt, gojq.OpLt, gojq.OpGe, gojq.OpLe:
	case gojq.OpAdd, gojq.OpSub, gojq.OpDiv, gojq.OpMod:
		// With a number on one side the result is a number, null or an error.
		if !isNumber(q.Left) && !isNumber(q.Right) {
			return false
		}
	case gojq.OpMul:
		// A string times n is n copies of it: at most one copy here.
		if !smallFactor(q.Left) && !smallFactor(q.Right) {
			return false
		}
	default: // assignments and updates can extend an array to any index
		return false
	}
	return smallTerm(q.Term) && smallSteps(q.Left) && smallSteps(q.Right)
}

// smallStepFuncs are the builtins (name/arity) whose result is a part of
// their input, a number, a boolean, or no larger than their input, and which
// run their arguments as ordinary steps.
var smallStepFuncs = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`empty/0 not/0 length/0 utf8bytelength/0 type/0
		has/1 in/1 contains/1 inside/1 startswith/1 endswith/1 ltrimstr/1 rtrimstr/1
		tonumber/0 ascii_downcase/0 ascii_upcase/0 test/1 test/2 keys/0 keys_unsorted/0
		select/1 map/1 first/0 last/0 first/1 last/1 nth/1 limit/2 isempty/1
		any/0 any/1 any/2 all/0 all/1 all/2 min/0 max/0 getpath/1 range/1 range/2 range/3
		recurse/0 recurse/1 recurse/2 values/0 nulls/0 booleans/0 numbers/0 strings/0
		arrays/0 objects/0 iterables/0 scalars/0 isnan/0 isinfinite/0 isnormal/0
		infinite/0 nan/0 floor/0 ceil/0 round/0 trunc/0 fabs/0 sqrt/0 abs/0 env/0 halt/0`) {
		smallStepFuncs[f] = true
	}
}

func smallTerm(t *gojq.Term) bool {
	if t == nil {
		return true
	}
	for _, s := range t.SuffixList {
		if !smallIndex(s.Index) {
			return false
		}
	}
	switch t.Type {
	case gojq.TermTypeIdentity, gojq.TermTypeRecurse, gojq.TermTypeNull, gojq.TermTypeTrue,
		gojq.TermTypeFalse, gojq.TermTypeNumber, gojq.TermTypeBreak:
		return true
	case gojq.TermTypeIndex:
		return smallIndex(t.Index)
	case gojq.TermTypeFunc:
		f := t.Func
		if strings.HasPrefix(f.Name, "$") { // a variable
			return true
		}
		if !smallStepFuncs[f.Name+"/"+strconv.Itoa(len(f.Args))] {
			return false
		}
		for _, a := range f.Args {
			if !smallSteps(a) {
				return false
			}
		}
		return true
	case gojq.TermTypeObject:
		for _, kv := range t.Object.KeyVals {
			if !smallString(kv.KeyString) || !smallSteps(kv.KeyQuery) || !smallSteps(kv.Val) {
				return false
			}
		}
		return true
	case gojq.TermTypeArray:
		return smallSteps(t.Array.Query)
	case gojq.TermTypeUnary:
		return smallTerm(t.Unary.Term)
	case gojq.TermTypeString:
		return smallString(t.Str)
	case gojq.TermTypeIf:
		for _, e := range t.If.Elif {
			if !smallSteps(e.Cond) || !smallSteps(e.Then) {
				return false
			}
		}
		return smallSteps(t.If.Cond) && smallSteps(t.If.Then) && smallSteps(t.If.Else)
	case gojq.TermTypeTry:
		return smallSteps(t.Try.Body) && smallSteps(t.Try.Catch)
	case gojq.TermTypeReduce:
		r := t.Reduce
		return smallPatterns(r.Patterns) && smallSteps(r.Query) && smallSteps(r.Start) && smallSteps(r.Update)
	case gojq.TermTypeForeach:
		f := t.Foreach
		return smallPatterns(f.Patterns) && smallSteps(f.Query) && smallSteps(f.Start) &&
			smallSteps(f.Update) && smallSteps(f.Extract)
	case gojq.TermTypeLabel:
		return smallSteps(t.Label.Body)
	case gojq.TermTypeQuery:
		return smallSteps(t.Query)
	}
	return false // a format (@base64, @json …) or a term gojq adds later
}

func smallIndex(x *gojq.Index) bool {
	return x == nil || smallString(x.Str) && smallSteps(x.Start) && smallSteps(x.End)
}

// smallString admits a string literal; interpolation renders values as
// JSON, which a pipeline of them can double at every stage.
func smallString(s *gojq.String) bool { return s == nil || len(s.Queries) == 0 }

// smallPatterns admits the destructuring patterns of `as`, whose keys may
// be computed.
func smallPatterns(ps []*gojq.Pattern) bool {
	for _, p := range ps {
		if !smallPatterns(p.Array) {
			return false
		}
		for _, o := range p.Object {
			if !smallString(o.KeyString) || !smallSteps(o.KeyQuery) || o.Val != nil && !smallPatterns([]*gojq.Pattern{o.Val}) {
				return false
			}
		}
	}
	return true
}

// number returns the value of a number literal, or of a negated one.
func number(q *gojq.Query) (float64, bool) {
	if q == nil || q.Op != 0 || q.Term == nil || len(q.Term.SuffixList) > 0 || len(q.Patterns) > 0 {
		return 0, false
	}
	t, sign := q.Term, 1.0
	if t.Type == gojq.TermTypeUnary && t.Unary.Term != nil && len(t.Unary.Term.SuffixList) == 0 {
		if t.Unary.Op == gojq.OpSub {
			sign = -1
		}
		t = t.Unary.Term
	}
	if t.Type != gojq.TermTypeNumber {
		return 0, false
	}
	f, err := strconv.ParseFloat(t.Number, 64)
	return sign * f, err == nil
}

func isNumber(q *gojq.Query) bool { _, ok := number(q); return ok }

// smallFactor reports whether q is a number that repeats a string at most
// once.
func smallFactor(q *gojq.Query) bool { f, ok := number(q); return ok && math.Abs(f) < 2 }
