package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cassdedup/cassdedup/guard"
	"github.com/cassdedup/cassdedup/lwt"
	"github.com/cassdedup/cassdedup/testnode"
)

// hostile are ids that would act on a terminal or hide what an operator sees if printed raw.
var hostile = []string{
	"inv\x1b[2J",              // clears the screen
	"inv-1\rinv-2",            // a carriage return overwrites the line
	"inv\u202e3-vni",          // a right-to-left override reverses what follows
	"a\u200db",                // a zero-width joiner
	"x\u2066y\u2069",          // an isolate
	"bell\a\x00nul",           // bell and NUL
	"next\nline",              // a fake line
	"tab\tcolumn",             // a fake column
	"soft\u00adhyphen\u2028s", // a soft hyphen and a line separator
}

func TestEscapeText(t *testing.T) {
	assert.Equal(t, "plain text: é, 中文, \"quoted\" \\ ok", escapeText("plain text: é, 中文, \"quoted\" \\ ok"), "printable text stays as written")
	assert.Equal(t, `inv\x1b[2J`, escapeText("inv\x1b[2J"))
	assert.Equal(t, `a\rb\nc\td`, escapeText("a\rb\nc\td"))
	assert.Equal(t, `\u202etxt a\u200db`, escapeText("\u202etxt a\u200db"))
	assert.Equal(t, `bad\xff\xfe "q"`, escapeText("bad\xff\xfe \"q\""))
	assert.Equal(t, "one\ntwo\\x1b", escapeLines("one\ntwo\x1b"), "escapeLines keeps the newlines")
}

func TestDisplay(t *testing.T) {
	assert.Equal(t, "inv-1", display("inv-1"))
	assert.Equal(t, "café", display("café"))
	assert.Equal(t, `"inv\x1b[2J"`, display("inv\x1b[2J"))
	assert.Equal(t, `"inv\u202e3-vni"`, display("inv\u202e3-vni"))
	assert.Equal(t, `"\xff"`, display("\xff"))
	assert.Equal(t, `"a b"`, display("a b"), "a space is quoted, so the parts of a key stay apart")
	assert.Equal(t, `""`, display(""))
	assert.Equal(t, `"\"inv\\x1b\""`, display(`"inv\x1b"`), "text that looks like a quoted id is quoted itself")
	assert.Equal(t, `shop "a b" c`, keyText([]any{"shop", "a b", "c"}))
	assert.Equal(t, `g t 2 "id\r"`, keyText([]any{"g", "t", int32(2), "id\r"}))
}

// terminalSafe fails t when s holds a character a terminal would act on, or invalid UTF-8.
func terminalSafe(t *testing.T, what, s string) {
	t.Helper()
	for _, line := range strings.Split(s, "\n") {
		if !utf8.ValidString(line) {
			t.Fatalf("%s holds invalid UTF-8:\n%q", what, line)
		}
		for i, r := range line {
			if !unicode.IsPrint(r) {
				t.Fatalf("%s holds %q at %d, which a terminal would act on:\n%q", what, r, i, line)
			}
		}
	}
}

func FuzzEscapeText(f *testing.F) {
	for _, s := range append([]string{"", "ok", "héllo", "\xff", `a"b\c`}, hostile...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := escapeText(s)
		terminalSafe(t, "escapeText", out)
		if isPlain(s) && out != s {
			t.Fatalf("plain %q was changed to %q", s, out)
		}
		if escapeText(out) != out {
			t.Fatalf("escapeText(%q) is not stable", out)
		}
		d := display(s)
		terminalSafe(t, "display", d)
		if d != s {
			back, err := strconv.Unquote(d)
			if err != nil || back != s {
				t.Fatalf("display(%q) = %s does not read back: %q, %v", s, d, back, err)
			}
		}
	})
}

// TestHostileIDsAreEscaped stores records under hostile ids through the library, then reads
// them with every command that prints ids: the tables show them escaped, the JSON exactly.
func TestHostileIDsAreEscaped(t *testing.T) {
	t.Parallel()
	session, ks := testnode.NewSession(t)
	ctx := context.Background()
	g, err := guard.New(session, guard.WithKeyspace(ks))
	require.NoError(t, err)
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys(ks))
	require.NoError(t, err)
	scope := guard.Scope{Group: "billing", Topic: "invoices", Partition: 1}
	for _, id := range hostile {
		_, err := g.Process(ctx, guard.Message{Scope: scope, ID: id}, func(context.Context, guard.Message) error {
			return fmt.Errorf("failed on \x1b]0;pwned\a%s", id)
		})
		require.Error(t, err)
		_, err = store.PutCompleted(ctx, lwt.IdempotencyKey("tenant\u202e", id), nil, []byte("result\x1b[31m red\r"), 1)
		require.NoError(t, err)
	}
	args := func(a ...string) []string { return append(a, "-keyspace", ks) }

	table := ok(t, args("messages", "list", "billing", "invoices", "1")...)
	terminalSafe(t, "messages list", table)
	for _, id := range hostile {
		assert.Contains(t, table, strconv.Quote(id), "the id is shown quoted and escaped")
	}
	var list struct{ Messages []messageView }
	okJSON(t, &list, args("messages", "list", "billing", "invoices", "1")...)
	var ids []string
	for _, m := range list.Messages {
		ids = append(ids, m.ID)
	}
	assert.ElementsMatch(t, hostile, ids, "the JSON holds the ids exactly")

	for _, id := range hostile {
		out := ok(t, "message", "get", "-keyspace", ks, "billing", "invoices", "1", "--", id)
		terminalSafe(t, "message get", out)
		assert.Contains(t, out, "billing invoices 1 "+strconv.Quote(id))
		out = ok(t, "key", "get", "-keyspace", ks, "tenant\u202e", "--", id)
		terminalSafe(t, "key get", out)
		assert.Contains(t, out, `"tenant\u202e" `+strconv.Quote(id))
		assert.Contains(t, out, `"result\x1b[31m red\r"`)
		var v recordView
		require.NoError(t, json.Unmarshal([]byte(ok(t, "key", "get", "-json", "-keyspace", ks, "tenant\u202e", "--", id)), &v))
		assert.Equal(t, []any{"tenant\u202e", id}, v.Key, "the JSON holds the key exactly")

		r := cli(t, nil, "key", "get", "-keyspace", ks, "tenant\u202e", "--", id+"\x1b[0m")
		assert.Equal(t, exitFailure, r.code)
		terminalSafe(t, "an error", strings.TrimSuffix(r.stderr, "\n"))
		assert.Contains(t, r.stderr, "no record of")
	}
	stuck := ok(t, args("messages", "stuck", "-min-attempts", "1")...)
	terminalSafe(t, "messages stuck", stuck)
}
