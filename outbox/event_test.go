package outbox

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEventIDStable(t *testing.T) {
	a := EventID("orders", "o-1", 0)
	assert.Len(t, a, 32)
	assert.Equal(t, a, EventID("orders", "o-1", 0))
	assert.NotEqual(t, a, EventID("orders", "o-1", 1))
	// Length prefixes keep ("ab","c") and ("a","bc") apart.
	assert.NotEqual(t, EventID("ab", "c", 0), EventID("a", "bc", 0))
}

func TestEventValidation(t *testing.T) {
	bad := []Event{
		{},
		{Type: strings.Repeat("t", MaxNameLength+1)},
		{Type: "\xff"},
		{Type: "ok", Key: "\xff"},
		{Type: "ok", Headers: map[string]string{"": "v"}},
	}
	for _, e := range bad {
		assert.ErrorIs(t, e.validate(), ErrInvalidEvent, "%+v", e)
	}
	assert.NoError(t, Event{Type: "ok", Key: "k", Headers: map[string]string{"h": "v"}}.validate())
}

func TestCellRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b, err := encodeCell(cell{StagedAt: at, Events: []Event{{Type: "a", Payload: []byte{0, 1}}, {Type: "b", Key: "k"}}})
	require.NoError(t, err)
	c, err := decodeCell(b)
	require.NoError(t, err)
	msgs := c.messages("ns", "key", 3)
	require.Len(t, msgs, 2)
	assert.Equal(t, EventID("ns", "key", 1), msgs[1].ID)
	assert.Equal(t, []byte{0, 1}, msgs[0].Payload)
	assert.Equal(t, int64(3), msgs[1].Fence)
	assert.True(t, msgs[0].StagedAt.Equal(at))
	for _, junk := range []string{"", "{", `{"v":2}`, `{"v":1,"events":[{"type":""}]}`} {
		_, err := decodeCell([]byte(junk))
		assert.ErrorIs(t, err, ErrMalformedEvents, junk)
	}
}

func FuzzDecodeCell(f *testing.F) {
	f.Add([]byte(`{"v":1,"events":[{"type":"a"}]}`))
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCell(b)
		if err == nil {
			_ = c.messages("ns", "k", 1)
		} else {
			assert.ErrorIs(t, err, ErrMalformedEvents)
		}
	})
}

func TestOptionsValidated(t *testing.T) {
	for _, o := range []Option{nil, WithShards(0), WithShards(2000), WithBucket(time.Millisecond), WithBucket(1500 * time.Millisecond),
		WithHorizon(time.Second), WithRetention(0), Option(WithRelayLease(time.Millisecond)), Option(WithPollInterval(0)),
		Option(WithMaxShards(0)), Option(WithRelayName("")), Option(WithPublishBatch(0)), Option(WithMaxSize(0)),
		WithKeyspace("bad name"), WithClock(nil),
		WithSerialConsistency(0), WithConsistency(1)} {
		_, err := newConfig(false, []Option{o})
		assert.ErrorIs(t, err, ErrInvalidOption)
	}
	_, err := New(nil)
	assert.ErrorIs(t, err, ErrInvalidOption)
	_, err = NewRelay(nil, nil)
	assert.ErrorIs(t, err, ErrInvalidOption)
}

func TestBucketOf(t *testing.T) {
	c, err := newConfig(false, []Option{WithBucket(time.Minute)})
	require.NoError(t, err)
	at := time.Unix(1_700_000_059, 0)
	assert.Equal(t, int64(1_700_000_040), c.bucketOf(at))
	assert.Equal(t, int64(1_700_000_100), c.bucketOf(at.Add(41*time.Second)))
	assert.Equal(t, int64(1_700_000_040), c.bucketOf(at.Add(40*time.Second)))
	assert.Less(t, shardOf("a", "b", 16), 16)
	assert.Equal(t, shardOf("a", "b", 16), shardOf("a", "b", 16))
}
