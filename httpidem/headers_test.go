package httpidem

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStoredHeaderDropsHopByHopAndCookiesByDefault(t *testing.T) {
	h := http.Header{
		"Content-Type":        {"application/json"},
		"Location":            {"/charges/1"},
		"Set-Cookie":          {"session=secret"},
		"Connection":          {"keep-alive, X-Conn-Scoped"},
		"X-Conn-Scoped":       {"1"},
		"Keep-Alive":          {"timeout=5"},
		"Transfer-Encoding":   {"chunked"},
		"Date":                {"Mon, 01 Jan 2024 00:00:00 GMT"},
		"Content-Length":      {"12"},
		"Idempotent-Replayed": {"true"},
	}
	h["upgrade"] = []string{"h2c"} // set on the map directly, not canonical
	assert.Equal(t, http.Header{"Content-Type": {"application/json"}, "Location": {"/charges/1"}},
		storedHeader(h, DefaultStoredHeader))

	all := storedHeader(h, func(string) bool { return true })
	assert.Contains(t, all, "Set-Cookie", "a filter that keeps everything keeps cookies")
	assert.NotContains(t, all, "Connection", "hop-by-hop headers are never stored")

	none := storedHeader(h, func(name string) bool { return name == "Location" })
	assert.Equal(t, http.Header{"Location": {"/charges/1"}}, none)
}
