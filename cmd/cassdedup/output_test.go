package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPreview(t *testing.T) {
	assert.Equal(t, `"ok"`, preview([]byte("ok"), 64))
	assert.Equal(t, `"a\nb\x1b[2J"`, preview([]byte("a\nb\x1b[2J"), 64), "control characters are escaped")
	assert.Equal(t, `"héll" ... (1 more bytes)`, preview([]byte("héllo"), 5), "a character is not split")
	assert.Equal(t, "hex:00ff ... (2 more bytes)", preview([]byte{0, 0xff, 1, 2}, 4))
	assert.Equal(t, `"\u202etxt"`, preview([]byte("\u202etxt"), 64), "a direction override is escaped")
	assert.Empty(t, preview(nil, 64))
	assert.Empty(t, preview([]byte("x"), 0))
}

func FuzzPreview(f *testing.F) {
	for _, s := range []string{"", "ok", "héllo", "\x00\xff", "a\x1b[31mred", "\u202etxt"} {
		f.Add([]byte(s), 8)
	}
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		n %= 1 << 12
		out := preview(b, n)
		for _, r := range out {
			if !unicode.IsPrint(r) {
				t.Fatalf("preview of %q has %q, which a terminal would act on", b, r)
			}
		}
	})
}

func FuzzParseInterleaved(f *testing.F) {
	f.Add("key get ns k -json")
	f.Add("-force ns -- -k")
	f.Add("a -n 3 b -- c -d")
	f.Add("-n")
	f.Fuzz(func(t *testing.T, line string) {
		fs := flag.NewFlagSet("fuzz", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Bool("force", false, "")
		fs.Bool("json", false, "")
		fs.Int("n", 0, "")
		args := strings.Fields(line)
		pos, err := parseInterleaved(fs, args)
		if err != nil {
			return
		}
		require.LessOrEqual(t, len(pos), len(args))
		for _, p := range pos {
			require.Contains(t, args, p, "a positional argument comes from the line")
		}
	})
}
