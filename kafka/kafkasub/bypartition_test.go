package kafkasub

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestByPartitionJoinsAPartitionSpreadOverFetches: a partition whose records come in two fetches
// of one poll (two brokers each had one buffered) is worked once, its records in offset order,
// so no commit can pass a failed record of the other part.
func TestByPartitionJoinsAPartitionSpreadOverFetches(t *testing.T) {
	recs := func(topic string, p int32, offsets ...int64) []*kgo.Record {
		out := make([]*kgo.Record, len(offsets))
		for i, o := range offsets {
			out[i] = &kgo.Record{Topic: topic, Partition: p, Offset: o}
		}
		return out
	}
	fetch := func(parts ...kgo.FetchPartition) kgo.Fetch {
		return kgo.Fetch{Topics: []kgo.FetchTopic{{Topic: "t", Partitions: parts}}}
	}
	first := fetch(kgo.FetchPartition{Partition: 0, Records: recs("t", 0, 10, 11)},
		kgo.FetchPartition{Partition: 1, Records: recs("t", 1, 5)},
		kgo.FetchPartition{Partition: 3}) // no records: not worked
	second := fetch(kgo.FetchPartition{Partition: 0, Records: recs("t", 0, 12, 13)})
	polls := byPartition(kgo.Fetches{first, second})
	require.Len(t, polls, 2)
	offsets := func(p kgo.FetchTopicPartition) []int64 {
		var out []int64
		for _, r := range p.Records {
			out = append(out, r.Offset)
		}
		return out
	}
	assert.Equal(t, int32(0), polls[0].Partition)
	assert.Equal(t, []int64{10, 11, 12, 13}, offsets(polls[0]))
	assert.Equal(t, int32(1), polls[1].Partition)
	assert.Equal(t, []int64{5}, offsets(polls[1]))
	assert.Len(t, first.Topics[0].Partitions[0].Records, 2, "the fetch's own slice is left as it was")
}
