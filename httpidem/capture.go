package httpidem

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
)

// capture is the ResponseWriter the handler writes to: it buffers the response so that it can
// be stored before it is sent, and switches to streaming it to the client once its stored form
// would exceed limit, so that a large response costs no more memory than a small one. It
// offers no Flush, Hijack or Unwrap: those would reach the client behind the buffer's back.
type capture struct {
	client     http.ResponseWriter
	header     http.Header
	keep       func(name string) bool
	limit      int // bytes of the stored form
	status     int // 0 until the header is written
	sent       http.Header
	stored     http.Header // sent, filtered to what is stored
	storedHead int         // length of the stored form without the body
	body       bytes.Buffer
	streaming  bool
	// buffered keeps the whole response from the client until the call has ended (a
	// repeatable handler's, which may lose its race); past the limit it is oversized instead
	// of streaming.
	buffered  bool
	oversized bool
	size      int64 // body bytes written by the handler
	clientErr error // the first error writing to the client while streaming
}

func newCapture(client http.ResponseWriter, keep func(string) bool, limit int) *capture {
	return &capture{client: client, header: http.Header{}, keep: keep, limit: limit}
}

// Header returns the header map that WriteHeader sends.
func (c *capture) Header() http.Header { return c.header }

// WriteHeader records the status and a snapshot of the header, as net/http sends them then.
// Informational (1xx) statuses are not forwarded: the response is sent as a whole later.
func (c *capture) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code)) // as net/http does
	}
	if c.status != 0 || code < 200 {
		return
	}
	c.status = code
	c.sent = c.header.Clone()
	c.stored = storedHeader(c.sent, c.keep)
	c.storedHead = len(encodeResponse(code, c.stored, nil))
}

// Write buffers p, or streams it once the stored form would exceed the limit.
func (c *capture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	c.size += int64(len(p))
	if !c.streaming && c.storedHead+c.body.Len()+len(p) > c.limit {
		if c.buffered {
			c.oversized = true
		} else {
			c.startStreaming()
		}
	}
	if !c.streaming {
		return c.body.Write(p)
	}
	if c.clientErr != nil {
		return 0, c.clientErr
	}
	n, err := c.client.Write(p)
	if err != nil {
		c.clientErr = err
	}
	return n, err
}

// finish completes a response the handler left unwritten, as net/http does: 200, no body.
func (c *capture) finish() {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
}

// startStreaming sends the header and what is buffered so far to the client.
func (c *capture) startStreaming() {
	c.streaming = true
	copyHeader(c.client.Header(), c.sent)
	c.client.WriteHeader(c.status)
	if c.body.Len() > 0 {
		if _, err := c.client.Write(c.body.Bytes()); err != nil {
			c.clientErr = err
		}
	}
	c.body = bytes.Buffer{}
}

// encoded returns the stored form of the buffered response.
func (c *capture) encoded() []byte { return encodeResponse(c.status, c.stored, c.body.Bytes()) }

// send writes the buffered response to the client, with every header the handler set.
func (c *capture) send() {
	copyHeader(c.client.Header(), c.sent)
	writeBody(c.client, c.status, c.body.Bytes())
}

// replay writes a stored response to w, marked as a replay.
func replay(w http.ResponseWriter, r storedResponse) {
	copyHeader(w.Header(), r.header)
	w.Header().Set(ReplayedHeader, "true")
	writeBody(w, r.status, r.body)
}

// writeBody writes status and body, with the body's length when the status allows one.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	if status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func copyHeader(dst, src http.Header) {
	for name, values := range src {
		dst[name] = values
	}
}
