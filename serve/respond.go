package serve

import (
	"encoding/json"
	"net/http"
	"time"
)

// problem is the JSON body of every answer that is not an upstream's.
type problem struct {
	Error  string          `json:"error"`
	Name   string          `json:"name,omitempty"`
	Errors []endpointError `json:"errors,omitempty"`
}

type endpointError struct {
	Name    string `json:"name"`
	Reason  string `json:"reason"`
	Skipped bool   `json:"skipped,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func refuse(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, problem{Error: msg})
}

// refuseAndClose refuses a request whose body is not to be read, and closes
// its connection as soon as the answer is written.
func refuseAndClose(w http.ResponseWriter, code int, msg string) {
	closeAfterAnswer(w)
	refuse(w, code, msg)
}

// closeAfterAnswer has w's connection closed once its answer is written,
// reading at most refusedBodyGrace more of the request's body.
//
// Connection: close alone does not: after the handler, net/http reads on
// up to 256 KiB of an unread body (to see where the next request would
// start) until the read deadline, so a caller refused with a body of 100 kB
// that never comes held its connection, and a descriptor, for ReadTimeout.
// A read deadline refusedBodyGrace from now bounds that read, and net/http
// closes the connection after it. The grace is for the caller that is only
// well-meaning: closing with some of its body unread would send a reset,
// which can take the answer with it (Go's transport, for one, reports the
// failed write of the rest of the body and not the 413 it was sent), while a
// body read to its end lets the close be a plain FIN after the answer.
// Past 256 KiB net/http reads nothing, sends its FIN at once, and closes
// the descriptor half a second later (its own guard against the reset
// taking the answer with it): either way a refused connection is held for
// at most half a second. This is the way net/http offers: hijacking would
// leave the answer's framing to the handler.
func closeAfterAnswer(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(refusedBodyGrace))
}

// refusedBodyGrace is how long a refused request's body is read on, to be
// thrown away, before its connection is closed: net/http's own delay
// before it closes a connection whose body it gave up on.
const refusedBodyGrace = 500 * time.Millisecond
