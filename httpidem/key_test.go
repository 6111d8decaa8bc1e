package httpidem

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseKeyAcceptsSFStringsAndBareTokens(t *testing.T) {
	for raw, want := range map[string]string{
		`"8e03978e-40d5-43e8-bc93-6894a57f9324"`: "8e03978e-40d5-43e8-bc93-6894a57f9324",
		`8e03978e-40d5-43e8-bc93-6894a57f9324`:   "8e03978e-40d5-43e8-bc93-6894a57f9324",
		`"a b"`:                                  "a b",
		`"say \"hi\" \\o/"`:                      `say "hi" \o/`,
		`  "padded"  `:                           "padded",
		`dGVzdA+/=`:                              "dGVzdA+/=",
		`*token:with/colon`:                      "*token:with/colon",
	} {
		got, err := parseKey([]string{raw}, 1, 255)
		require.NoError(t, err, raw)
		assert.Equal(t, want, got, raw)
	}
}

func TestParseKeyRefusals(t *testing.T) {
	for raw, want := range map[string]error{
		``:                                   errKeyEmpty,
		`   `:                                errKeyEmpty,
		`""`:                                 errKeyEmpty,
		`"unterminated`:                      errKeyMalformed,
		`"bad \x escape"`:                    errKeyMalformed,
		`"trailing\`:                         errKeyMalformed,
		`"a";param=1`:                        errKeyMalformed,
		`"a", "b"`:                           errKeyMalformed,
		`"a"b`:                               errKeyMalformed,
		`two words`:                          errKeyMalformed,
		`a,b`:                                errKeyMalformed,
		`a;b`:                                errKeyMalformed,
		"\"tab\tinside\"":                    errKeyMalformed,
		"caf\u00e9":                          errKeyMalformed,
		"\"caf\u00e9\"":                      errKeyMalformed,
		strings.Repeat("k", 256):             errKeyTooLong,
		`"` + strings.Repeat("k", 256) + `"`: errKeyTooLong,
	} {
		_, err := parseKey([]string{raw}, 1, 255)
		assert.ErrorIs(t, err, want, "%q", raw)
		assert.ErrorIs(t, err, ErrInvalidKey, "%q", raw)
	}
	_, err := parseKey(nil, 1, 255)
	assert.ErrorIs(t, err, errKeyMissing)
	assert.NotErrorIs(t, err, ErrInvalidKey, "a missing key is not an invalid one: it may be optional")
	_, err = parseKey([]string{"a", "b"}, 1, 255)
	assert.ErrorIs(t, err, errKeyMalformed, "the header sent twice")
}

func TestParseKeyLimitCountsUnquotedBytes(t *testing.T) {
	k := strings.Repeat(`\"`, 255) // 255 bytes once unescaped, 510 as sent
	got, err := parseKey([]string{`"` + k + `"`}, DefaultMinKeyLength, 255)
	require.NoError(t, err)
	assert.Len(t, got, 255)
}

func TestParseKeyMinimumLength(t *testing.T) {
	for _, ok := range []string{
		"8e03978e-40d5-43e8-bc93-6894a57f9324", // UUID
		"8e03978e40d543e8bc936894a57f9324",     // UUID without hyphens
		"01ARZ3NDEKTSV4RRFFQ69G5FAV",           // ULID
		strings.Repeat("k", DefaultMinKeyLength),
		`"` + strings.Repeat(`\\`, DefaultMinKeyLength) + `"`, // 16 bytes once unescaped
	} {
		_, err := parseKey([]string{ok}, DefaultMinKeyLength, 255)
		assert.NoError(t, err, ok)
	}
	for _, short := range []string{"1", "order-7", strings.Repeat("k", DefaultMinKeyLength-1), `"` + strings.Repeat("k", 15) + `"`} {
		_, err := parseKey([]string{short}, DefaultMinKeyLength, 255)
		assert.ErrorIs(t, err, errKeyTooShort, short)
		assert.ErrorIs(t, err, ErrInvalidKey, short)
	}
}

// quoteKey formats key as an sf-string, the form a client should send.
func quoteKey(key string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
}

// FuzzParseKey checks the header parser on any input: it never panics, what it accepts is a
// usable key within the limit, and a key it accepts parses back to itself when sent quoted.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{`"abc"`, `abc`, `""`, `"a\"b"`, `"a\\"`, `"a";p`, `"a",b`, "\"\x7f\"", `"\`, ` x `, "\xff"} {
		f.Add(s, 16)
	}
	f.Fuzz(func(t *testing.T, raw string, maxLen int) {
		maxLen = 1 + abs(maxLen)%64
		minLen := 1 + maxLen/4
		key, err := parseKey([]string{raw}, minLen, maxLen)
		if err != nil {
			assert.ErrorIs(t, err, ErrInvalidKey)
			assert.Empty(t, key)
			return
		}
		require.NotEmpty(t, key)
		require.LessOrEqual(t, len(key), maxLen)
		require.GreaterOrEqual(t, len(key), minLen)
		for i := 0; i < len(key); i++ {
			require.True(t, key[i] >= 0x20 && key[i] < 0x7f, "printable ASCII only: %q", key)
		}
		again, err := parseKey([]string{quoteKey(key)}, minLen, maxLen)
		require.NoError(t, err)
		require.Equal(t, key, again)
	})
}

func abs(n int) int {
	if n < 0 {
		return -(n + 1) // no overflow at the minimum
	}
	return n
}
