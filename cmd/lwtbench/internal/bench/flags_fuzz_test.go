package bench

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// FuzzParseFlags feeds arbitrary command lines to the parser: every one must parse, or fail with
// a *UsageError (flag.ErrHelp for -h), never panic; a parsed one must be runnable.
func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{
		"", "-long", "-concurrency 1,4,16 -rate 0", "-dc-rf dc1:3,dc2:3 -serial LOCAL_SERIAL",
		"-ops insert,bloom -duration 1s", "-concurrency 0", "-rf 2 -dc-rf dc1:3", "-h", "-ops nope", "x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := ParseFlags(strings.Fields(line), func(string) string { return "" }, Catalog())
		var usage *UsageError
		switch {
		case err == nil:
			if len(c.Concurrency) == 0 && c.Rate == 0 || len(c.Ops) == 0 || c.Duration <= 0 {
				t.Fatalf("%q parsed into a config that cannot run: %+v", line, c)
			}
		case errors.Is(err, flag.ErrHelp), errors.As(err, &usage):
		default:
			t.Fatalf("%q: untyped error %v", line, err)
		}
	})
}
