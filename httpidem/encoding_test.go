package httpidem

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEncodeResponseRoundTrip(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}, "Link": {"<a>", "<b>"}, "X-Empty": {}}
	body := []byte(`{"charge":"ch_1"}`)
	b := encodeResponse(http.StatusCreated, h, body)
	assert.Len(t, b, len(encodeResponse(http.StatusCreated, h, nil))+len(body), "the body is appended as it is")
	got, err := decodeStored(b)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, got.status)
	assert.Equal(t, h, got.header)
	assert.Equal(t, body, got.body)
	assert.False(t, got.oversized)
	assert.Equal(t, b, encodeResponse(got.status, got.header, got.body), "headers are written in one order")
}

func TestEncodeOversizedRoundTrip(t *testing.T) {
	got, err := decodeStored(encodeOversized(http.StatusOK, 5<<20))
	require.NoError(t, err)
	assert.True(t, got.oversized)
	assert.Equal(t, http.StatusOK, got.status)
	assert.EqualValues(t, 5<<20, got.size)
}

func TestEncodingIsSmallerThanJSONWithBase64(t *testing.T) {
	h := http.Header{"Content-Type": {"application/octet-stream"}}
	body := bytes.Repeat([]byte{0xa5}, 4096)
	j, err := json.Marshal(struct {
		Status int
		Header http.Header
		Body   []byte
	}{201, h, body})
	require.NoError(t, err)
	b := encodeResponse(201, h, body)
	assert.Less(t, len(b), len(body)+64)
	assert.Greater(t, len(j), base64.StdEncoding.EncodedLen(len(body)))
}

func TestDecodeStoredRefusesWhatItCannotRead(t *testing.T) {
	good := encodeResponse(200, http.Header{"A": {"b"}}, []byte("x"))
	for name, b := range map[string][]byte{
		"empty":          nil,
		"short":          {formatV1},
		"future version": append([]byte{2}, good[1:]...),
		"unknown kind":   {formatV1, 'Z', 200, 1},
		"status below":   {formatV1, kindResponse, 99, 0},
		"status above":   append([]byte{formatV1, kindResponse}, 0xe8, 0x07, 0), // 1000
		"truncated":      good[:6],
		"huge count":     {formatV1, kindResponse, 200, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"trailing mark":  append(encodeOversized(200, 1), 0),
	} {
		_, err := decodeStored(b)
		assert.ErrorIs(t, err, errStoredFormat, name)
	}
}

func FuzzDecodeStored(f *testing.F) {
	f.Add(encodeResponse(201, http.Header{"Content-Type": {"text/plain"}, "Vary": {"A", "B"}}, []byte("hello")))
	f.Add(encodeOversized(200, 1<<20))
	f.Add([]byte{formatV1, kindResponse, 200, 3, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeStored(b)
		if err != nil {
			return
		}
		require.GreaterOrEqual(t, r.status, 100)
		require.LessOrEqual(t, r.status, 999)
		if r.oversized {
			again, err := decodeStored(encodeOversized(r.status, r.size))
			require.NoError(t, err)
			require.Equal(t, r, again)
			return
		}
		again, err := decodeStored(encodeResponse(r.status, r.header, r.body))
		require.NoError(t, err)
		require.Equal(t, r.status, again.status)
		require.Equal(t, r.header, again.header)
		require.Equal(t, string(r.body), string(again.body))
	})
}
