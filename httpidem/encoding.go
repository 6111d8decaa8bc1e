package httpidem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"slices"
)

// The stored form of a response, version 1:
//
//	version  byte   formatV1
//	kind     byte   kindResponse or kindOversized
//	status   uvarint
//	response: header count uvarint, then per header its name (uvarint length, bytes), its value
//	          count (uvarint) and each value (uvarint length, bytes), sorted by name; then the
//	          body's raw bytes to the end
//	oversized: the body's size in bytes (uvarint), nothing else
//
// Binary rather than JSON so that a body is stored as it is, not a third larger in base64.
const (
	formatV1      = 1
	kindResponse  = 'R'
	kindOversized = 'O'
)

// errStoredFormat: a stored response this version cannot read.
var errStoredFormat = errors.New("httpidem: unreadable stored response")

// storedResponse is a decoded record: a response to replay, or the mark of one too large to keep.
type storedResponse struct {
	status    int
	header    http.Header
	body      []byte
	oversized bool
	size      int64 // oversized: the body's size in bytes
}

// encodeResponse returns the stored form of a response; its length is
// len(encodeResponse(status, header, nil)) + len(body).
func encodeResponse(status int, header http.Header, body []byte) []byte {
	b := make([]byte, 0, 16+len(body))
	b = append(b, formatV1, kindResponse)
	b = binary.AppendUvarint(b, uint64(status))
	names := make([]string, 0, len(header))
	for name := range header {
		names = append(names, name)
	}
	slices.Sort(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		b = appendField(b, name)
		values := header[name]
		b = binary.AppendUvarint(b, uint64(len(values)))
		for _, v := range values {
			b = appendField(b, v)
		}
	}
	return append(b, body...)
}

// encodeOversized returns the stored mark of a response that was answered but not stored.
func encodeOversized(status int, size int64) []byte {
	b := []byte{formatV1, kindOversized}
	b = binary.AppendUvarint(b, uint64(status))
	return binary.AppendUvarint(b, uint64(size))
}

func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeStored reads a record written by encodeResponse or encodeOversized. The body aliases b.
func decodeStored(b []byte) (storedResponse, error) {
	if len(b) < 2 {
		return storedResponse{}, fmt.Errorf("%w: %d bytes", errStoredFormat, len(b))
	}
	if b[0] != formatV1 {
		return storedResponse{}, fmt.Errorf("%w: format version %d", errStoredFormat, b[0])
	}
	d := decoder{b: b[2:]}
	r := storedResponse{status: int(d.uvarint(999))}
	if r.status < 100 {
		d.fail()
	}
	switch b[1] {
	case kindOversized:
		r.oversized = true
		r.size = int64(d.uvarint(1 << 62))
		if len(d.b) != 0 {
			d.fail()
		}
	case kindResponse:
		// Each header takes at least two bytes, which bounds what a corrupt count allocates.
		n := d.uvarint(uint64(len(d.b) / 2))
		r.header = make(http.Header, n)
		for range n {
			name := d.field()
			values := make([]string, d.uvarint(uint64(len(d.b))))
			for i := range values {
				values[i] = d.field()
			}
			r.header[name] = values
		}
		r.body = d.b
	default:
		return storedResponse{}, fmt.Errorf("%w: kind %q", errStoredFormat, b[1])
	}
	if d.bad {
		return storedResponse{}, fmt.Errorf("%w: truncated or corrupt", errStoredFormat)
	}
	return r, nil
}

// decoder reads uvarint-framed fields; after the first error every read returns zero.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) fail() { d.bad, d.b = true, nil }

// uvarint reads a uvarint no greater than limit.
func (d *decoder) uvarint(limit uint64) uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > limit {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) field() string {
	n := d.uvarint(uint64(len(d.b)))
	if d.bad || n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
