package redact

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
)

// Handler returns a slog.Handler that redacts, as String does, the message
// and every string-like attribute value (strings, errors, Stringers, values
// that format to text holding a secret, inside groups and attributes added
// with WithAttrs) before h sees them; a string attribute whose key names a
// credential ("token", "api_key", ...) is hidden whole. Other values reach h
// unchanged.
func (r *Redactor) Handler(h slog.Handler) slog.Handler {
	return &handler{r: r, h: h}
}

type handler struct {
	r *Redactor
	h slog.Handler
}

func (x *handler) Enabled(ctx context.Context, l slog.Level) bool { return x.h.Enabled(ctx, l) }

func (x *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, x.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(x.r.attr(a))
		return true
	})
	return x.h.Handle(ctx, out)
}

func (x *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		out[i] = x.r.attr(a)
	}
	return &handler{r: x.r, h: x.h.WithAttrs(out)}
}

func (x *handler) WithGroup(name string) slog.Handler {
	return &handler{r: x.r, h: x.h.WithGroup(x.r.String(name))}
}

func (r *Redactor) attr(a slog.Attr) slog.Attr {
	a.Key = r.String(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		v = slog.StringValue(r.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, ga := range g {
			out[i] = r.attr(ga)
		}
		v = slog.GroupValue(out...)
	case slog.KindAny:
		v = r.anyValue(v)
	}
	if v.Kind() == slog.KindString && IsSecretName(a.Key) {
		v = slog.StringValue(Marker) // slog.String("token", t)
	}
	a.Value = v
	return a
}

// anyValue redacts a value of kind Any, keeping it as it is (so a JSON
// handler can still marshal it) unless its text holds something to hide.
func (r *Redactor) anyValue(v slog.Value) slog.Value {
	var texts []string
	switch x := v.Any().(type) {
	case nil:
		return v
	case error:
		texts = append(texts, safeText(func() string { return x.Error() }))
	case fmt.Stringer:
		texts = append(texts, safeText(func() string { return x.String() }))
	case []byte:
		texts = append(texts, string(x))
	default:
		texts = append(texts, safeText(func() string { return fmt.Sprintf("%+v", x) }))
		if b, err := json.Marshal(x); err == nil {
			texts = append(texts, string(b))
		}
	}
	for _, t := range texts {
		if rt := r.String(t); rt != t {
			return slog.StringValue(r.String(texts[0]))
		}
	}
	return v
}

// safeText calls f, turning a panic (a nil pointer's Error method, say) into
// text rather than taking the logger down.
func safeText(f func() string) (s string) {
	defer func() {
		if p := recover(); p != nil {
			s = fmt.Sprintf("!PANIC: %v", p)
		}
	}()
	return f()
}
