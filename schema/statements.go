package schema

import (
	"errors"
	"fmt"
	"strings"
)

// ErrMalformedCQL is returned when a CQL file cannot be split into statements, for example an
// unterminated string literal or block comment.
var ErrMalformedCQL = errors.New("schema: malformed CQL")

// splitStatements removes comments from src and splits it at semicolons outside string
// literals, returning each statement without its semicolon, trimmed, empty ones dropped.
// Every occurrence of "<from>." outside literals and quoted identifiers, at a word boundary, is
// replaced by "<to>." so the files' default keyspace can be retargeted.
func splitStatements(src, from, to string) ([]string, error) {
	var (
		out  []string
		cur  strings.Builder
		i    int
		n    = len(src)
		flag = func() {
			if s := trimLines(cur.String()); s != "" {
				out = append(out, s)
			}
			cur.Reset()
		}
	)
	for i < n {
		c := src[i]
		switch {
		case c == '\'' || c == '"':
			end := closingQuote(src, i)
			if end < 0 {
				return nil, fmt.Errorf("%w: unterminated %c literal at byte %d", ErrMalformedCQL, c, i)
			}
			cur.WriteString(src[i : end+1])
			i = end + 1
		case strings.HasPrefix(src[i:], "--") || strings.HasPrefix(src[i:], "//"):
			for i < n && src[i] != '\n' {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("%w: unterminated block comment at byte %d", ErrMalformedCQL, i)
			}
			cur.WriteByte(' ')
			i += end + 4
		case c == ';':
			flag()
			i++
		case from != "" && strings.HasPrefix(src[i:], from+".") && (i == 0 || !isWordByte(src[i-1])):
			cur.WriteString(to + ".")
			i += len(from) + 1
		default:
			cur.WriteByte(c)
			i++
		}
	}
	flag()
	return out, nil
}

// closingQuote returns the index of the quote closing the literal that opens at start; a
// doubled quote inside the literal is an escaped quote, as in CQL.
func closingQuote(s string, start int) int {
	q := s[start]
	for i := start + 1; i < len(s); i++ {
		if s[i] != q {
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			i++
			continue
		}
		return i
	}
	return -1
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// trimLines trims the statement and the spaces that removed comments leave at line ends.
func trimLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.Join(lines, "\n")
}
