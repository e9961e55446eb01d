package serve

import (
	"encoding/json"
	"net/http"
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
// its connection after the answer.
func refuseAndClose(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Connection", "close")
	refuse(w, code, msg)
}
