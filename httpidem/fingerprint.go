package httpidem

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"

	"github.com/cassdedup/cassdedup/lwt"
)

// Errors of reading the request body.
var (
	errBodyTooLarge   = errors.New("httpidem: request body too large")
	errBodyUnreadable = errors.New("httpidem: request body unreadable")
)

// RequestFingerprint is the default fingerprint: the SHA-256 of the method, the escaped path,
// the raw query and the body, each framed by its length so that no two requests share one. The
// query is compared as sent: a client's retry repeats its bytes; the method in upper case.
func RequestFingerprint(r *http.Request, body []byte) ([]byte, error) {
	if r == nil || r.URL == nil {
		return nil, fmt.Errorf("%w: httpidem: nil request or URL", lwt.ErrInvalidArgument)
	}
	h := sha256.New()
	writeFramed(h, strings.ToUpper(r.Method)) // "post" is the request POST was: see WithMethods
	writeFramed(h, r.URL.EscapedPath())
	writeFramed(h, r.URL.RawQuery)
	h.Write(body)
	return h.Sum(nil), nil
}

func writeFramed(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// readBody reads the whole body, at most limit bytes, and puts an unread copy back in its place
// so the handler gets it unchanged.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", errBodyTooLarge, r.ContentLength, limit)
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	var maxBytes *http.MaxBytesError // an outer http.MaxBytesReader with a lower limit
	switch {
	case errors.As(err, &maxBytes):
		return nil, fmt.Errorf("%w: limit %d", errBodyTooLarge, maxBytes.Limit)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errBodyUnreadable, err)
	case int64(len(body)) > limit:
		return nil, fmt.Errorf("%w: over %d bytes", errBodyTooLarge, limit)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return body, nil
}
