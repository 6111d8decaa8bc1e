package main

import (
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

// emit prints v as indented JSON with -json, and otherwise the table that table writes.
func (e *env) emit(v any, table func(w io.Writer)) error {
	if e.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// row writes tab-separated cells and a newline.
func row(w io.Writer, cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(w, "\t")
		}
		fmt.Fprint(w, c)
	}
	fmt.Fprintln(w)
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
// quoting escapes control and formatting characters, so none can act on the terminal), else hex.
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

// keyText joins a key's values for a table cell.
func keyText(k []any) string {
	parts := make([]string, len(k))
	for i, v := range k {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, " ")
}
