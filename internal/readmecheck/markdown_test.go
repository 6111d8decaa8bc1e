package readmecheck

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// block is one fenced code block of a Markdown file.
type block struct {
	lang string // the info string's first word, e.g. "go"
	line int    // the 1-based line of the opening fence
	text string // the lines between the fences, each ending in a newline
}

// blocks returns the fenced code blocks of md, in order. An unclosed fence is an error: whatever
// follows it would silently stop being checked.
func blocks(md string) ([]block, error) {
	var (
		out  []block
		cur  *block
		body strings.Builder
	)
	for i, line := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, "```") {
			if cur != nil {
				body.WriteString(line)
				body.WriteByte('\n')
			}
			continue
		}
		if cur == nil {
			lang, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), " ")
			cur = &block{lang: lang, line: i + 1}
			body.Reset()
			continue
		}
		cur.text = body.String()
		out = append(out, *cur)
		cur = nil
	}
	if cur != nil {
		return nil, fmt.Errorf("readmecheck: code block opened on line %d is never closed", cur.line)
	}
	return out, nil
}

// link is one inline Markdown link outside code: [text](target).
type link struct {
	line   int
	target string
}

var (
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	heading    = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*#*\s*$`)
)

// lines calls fn for every line of md outside fenced code blocks.
func lines(md string, fn func(n int, line string)) {
	inFence := false
	for i, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if !inFence {
			fn(i+1, line)
		}
	}
}

// links returns the inline links of md outside fenced blocks and code spans.
func links(md string) []link {
	var out []link
	lines(md, func(n int, line string) {
		for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			out = append(out, link{line: n, target: m[1]})
		}
	})
	return out
}

// isRelative reports whether target names a path in the repository rather than a URL.
func isRelative(target string) bool {
	if i := strings.IndexAny(target, ":/#"); i > 0 && target[i] == ':' {
		return false // a scheme: https:, mailto:
	}
	return !strings.HasPrefix(target, "//")
}

// anchors returns the fragment ids GitHub gives the headings of md, with "-1", "-2", ...
// appended to repeats as GitHub does.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines(md, func(_ int, line string) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		id := slug(m[1])
		if n := seen[id]; n > 0 {
			out[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			out[id] = true
		}
		seen[id]++
	})
	return out
}

// slug is the fragment id GitHub derives from a heading's text: lowercase, letters, digits,
// hyphens and underscores kept, spaces made hyphens, everything else dropped.
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
