package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// emit prints v as indented JSON with -json, and otherwise the table that table writes. The
// JSON is exact (the encoder escapes what JSON must); the table is terminal-safe: every cell
// and line passes through escapeText, so whatever a record holds, nothing reaches the
// operator's terminal that it would act on.
func (e *env) emit(v any, table func(w io.Writer)) error {
	if e.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	table(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := io.WriteString(e.stdout, escapeLines(buf.String()))
	return err
}

// row writes tab-separated cells and a newline; each cell is escaped, so a tab or newline
// inside a value can neither shift the columns nor start a line of its own.
func row(w io.Writer, cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(w, "\t")
		}
		fmt.Fprint(w, escapeText(fmt.Sprint(c)))
	}
	fmt.Fprintln(w)
}

// escapeText is the command's one escaping of text for a terminal: every character a terminal
// could act on or that hides what follows (control characters, carriage returns and escape
// sequences, Unicode format characters such as the bidi overrides U+202A-U+202E and
// U+2066-U+2069 and zero-width joiners, line and paragraph separators) and every byte of
// invalid UTF-8 is written as Go writes it in a quoted string (\x1b, \r, \u202e, \xff). What a
// terminal shows as written is left as it is. The result holds printable characters only.
func escapeText(s string) string {
	if isPlain(s) {
		return s
	}
	q := strconv.Quote(s)
	// strconv.Quote also escapes quotes and backslashes; undo that outside the escapes it added
	// for the characters above, so the rest of the text reads as written.
	var b strings.Builder
	for i := 1; i < len(q)-1; i++ {
		if q[i] == '\\' && (q[i+1] == '"' || q[i+1] == '\\') {
			i++
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// escapeLines is escapeText for text of several lines: the newlines stay.
func escapeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = escapeText(l)
	}
	return strings.Join(lines, "\n")
}

// isPlain reports whether s is valid UTF-8 made only of characters a terminal shows as
// written (strconv.IsPrint: letters, marks, numbers, punctuation, symbols and the space).
func isPlain(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			return false // RuneError: an invalid byte (or U+FFFD itself, which is quoted too)
		}
	}
	return true
}

// display shows a value that came from outside (an id, key, namespace, counter, owner name)
// so that the operator sees exactly what it is and can type it back: as it is when it is plain
// text without quotes, backslashes or spaces, else quoted and escaped as a Go string (the same
// escaping as escapeText and preview), so two different values never look alike and a value
// never runs into its neighbour.
func display(s string) string {
	if s != "" && isPlain(s) && !strings.ContainsAny(s, `"\ `) {
		return s
	}
	return strconv.Quote(s)
}

// stamp formats an instant in UTC to the millisecond, as Cassandra stores it; "-" for none.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// relative says how far t is from now: "in 12s" or "3m5s ago".
func relative(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(now).Round(time.Second)
	if d >= 0 {
		return "in " + d.String()
	}
	return (-d).String() + " ago"
}

// stampRel is stamp with relative in parentheses.
func stampRel(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return stamp(t) + " (" + relative(t, now) + ")"
}

// preview shows at most n bytes of b safely on a terminal: quoted text when b is UTF-8 (the
// quoting escapes control and formatting characters as escapeText does, so none can act on the
// terminal), else hex.
// It says when it cut.
func preview(b []byte, n int) string {
	if len(b) == 0 || n <= 0 {
		return ""
	}
	cut := b
	if len(cut) > n {
		cut = cut[:n]
		for len(cut) > 0 && !utf8.Valid(cut) { // do not split a character
			cut = cut[:len(cut)-1]
		}
	}
	more := ""
	if len(cut) < len(b) {
		more = fmt.Sprintf(" ... (%d more bytes)", len(b)-len(cut))
	}
	if utf8.Valid(cut) {
		return strconv.Quote(string(cut)) + more
	}
	raw := b[:min(len(b), n/2)]
	more = ""
	if len(raw) < len(b) {
		more = fmt.Sprintf(" ... (%d more bytes)", len(b)-len(raw))
	}
	return "hex:" + hex.EncodeToString(raw) + more
}

// keyText joins a key's values for a table cell or a message, each shown with display.
func keyText(k []any) string {
	parts := make([]string, len(k))
	for i, v := range k {
		parts[i] = display(fmt.Sprint(v))
	}
	return strings.Join(parts, " ")
}
