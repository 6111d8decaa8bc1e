package httpidem

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of parsing the key header. They match ErrInvalidKey except errKeyMissing.
var (
	errKeyMissing   = errors.New("httpidem: idempotency key missing")
	errKeyEmpty     = fmt.Errorf("%w: empty", ErrInvalidKey)
	errKeyMalformed = fmt.Errorf("%w: not an sf-string or bare token", ErrInvalidKey)
	errKeyTooLong   = fmt.Errorf("%w: too long", ErrInvalidKey)
	errKeyTooShort  = fmt.Errorf("%w: too short", ErrInvalidKey)
)

// parseKey reads the key from the values of the key header: an RFC 8941 sf-string or a bare
// token (docs/http.md, "The key"), of minLen to maxLen bytes once unquoted.
func parseKey(values []string, minLen, maxLen int) (string, error) {
	switch len(values) {
	case 0:
		return "", errKeyMissing
	case 1:
	default:
		return "", errKeyMalformed // a header sent twice is a list, not an Item
	}
	v := strings.Trim(values[0], " \t")
	if v == "" {
		return "", errKeyEmpty
	}
	var key string
	if v[0] == '"' {
		var ok bool
		if key, ok = parseSFString(v, maxLen); !ok {
			if len(key) > maxLen {
				return "", errKeyTooLong
			}
			return "", errKeyMalformed
		}
	} else {
		for i := 0; i < len(v); i++ {
			if !bareChar(v[i]) {
				return "", errKeyMalformed
			}
		}
		key = v
	}
	switch {
	case key == "":
		return "", errKeyEmpty
	case len(key) > maxLen:
		return "", errKeyTooLong
	case len(key) < minLen:
		return "", errKeyTooShort
	}
	return key, nil
}

// parseSFString parses v, which starts with DQUOTE, as an RFC 8941 String that is the whole
// value. ok is false if it is malformed, has anything after its closing quote (parameters
// included: the draft defines none) or grows past maxLen (the partial key is returned then,
// so the caller can tell).
func parseSFString(v string, maxLen int) (key string, ok bool) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", false
			}
			b.WriteByte(v[i])
		case c == '"':
			return b.String(), i == len(v)-1
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
		if b.Len() > maxLen {
			return b.String(), false
		}
	}
	return "", false // no closing quote
}

// bareChar reports whether c may appear in an unquoted key: visible ASCII other than DQUOTE,
// backslash, comma and semicolon, which would make the value a malformed String, a list or an
// Item with parameters.
func bareChar(c byte) bool {
	return c > 0x20 && c < 0x7f && c != '"' && c != '\\' && c != ',' && c != ';'
}
