package kafkasub_test

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/cassdedup/cassdedup/kafka/kafkasub"
)

// withAttrs returns a record whose attributes byte is attrs, as a fetch decodes it: bit 3 the
// timestamp type (1: LogAppendTime), bit 7 no timestamp at all (franz-go's mark for the message
// format before Kafka 0.10). Only the broker sets them otherwise.
func withAttrs(attrs uint8) *kgo.Record {
	r := &kgo.Record{Topic: "orders", Timestamp: time.UnixMilli(1_764_327_000_123)}
	*(*uint8)(unsafe.Pointer(&r.Attrs)) = attrs
	return r
}

// TestRecordTimeByType: the producer's timestamp is the time; the broker's is refused with
// ErrBrokerTime; a record without any timestamp with ErrNoTime, not as a broker's time.
func TestRecordTimeByType(t *testing.T) {
	t.Parallel()
	require.Equal(t, int8(1), withAttrs(0b0000_1000).Attrs.TimestampType(), "the test sets the attributes as franz-go reads them")
	at, err := kafkasub.RecordTime(withAttrs(0))
	require.NoError(t, err)
	require.True(t, at.Equal(time.UnixMilli(1_764_327_000_123)))
	_, err = kafkasub.RecordTime(withAttrs(0b0000_1000))
	require.ErrorIs(t, err, kafkasub.ErrBrokerTime)
	_, err = kafkasub.RecordTime(withAttrs(0b1000_0000))
	require.ErrorIs(t, err, kafkasub.ErrNoTime)
	require.NotErrorIs(t, err, kafkasub.ErrBrokerTime)
}
