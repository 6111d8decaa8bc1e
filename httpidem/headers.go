package httpidem

import (
	"net/http"
	"strings"
)

// ReplayedHeader is the response header that marks a replay, set to "true".
const ReplayedHeader = "Idempotent-Replayed"

// neverStored are the response headers that are never stored, whatever WithStoredHeaders says:
// the hop-by-hop headers of RFC 9110 section 7.6.1 (and the Proxy-Connection of old clients),
// which belong to one connection, and the headers the server writes anew for every response.
var neverStored = map[string]bool{
	"Connection":          true,
	"Keep-Alive":          true,
	"Proxy-Connection":    true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Te":                  true,
	"Trailer":             true,
	"Transfer-Encoding":   true,
	"Upgrade":             true,
	"Date":                true,
	"Content-Length":      true,
	ReplayedHeader:        true,
}

// DefaultStoredHeader is the default of WithStoredHeaders: it stores every header but
// Set-Cookie, whose cookie usually belongs to the client that made the first request (see
// docs/http.md, "Stored headers"). name is in canonical form.
func DefaultStoredHeader(name string) bool { return name != "Set-Cookie" }

// storedHeader returns the headers of h that are stored: those keep allows, less the ones never
// stored and those that h's Connection header names.
func storedHeader(h http.Header, keep func(name string) bool) http.Header {
	var named map[string]bool // hop-by-hop by the response's own Connection header
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				if named == nil {
					named = map[string]bool{}
				}
				named[http.CanonicalHeaderKey(f)] = true
			}
		}
	}
	out := make(http.Header, len(h))
	for name, values := range h {
		c := http.CanonicalHeaderKey(name) // a handler may have set the map directly
		if neverStored[c] || named[c] || !keep(c) {
			continue
		}
		out[name] = values
	}
	return out
}
