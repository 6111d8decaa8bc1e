package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// idHeader carries the message id that the producer sets once per message. The guard keys
// its records by it, not by the offset: a producer duplicate (the same message sent again, so
// stored at another offset) has the same id and, being keyed by it, the same partition.
const idHeader = "message-id"

// produced is what produce wrote.
type produced struct {
	records, distinct, duplicates int
}

// produce writes n distinct payments to topic, and writes every dupEvery-th one a second time
// a few dozen records later, as a producer that retried a send whose acknowledgement it lost
// would. Each record's key is its id (so both copies go to one partition), its id header is
// the id, and its timestamp is set by the producer once per message (so both copies carry the
// same time, which ProcessBatch groups by).
func produce(ctx context.Context, cl *kgo.Client, topic string, n, dupEvery int) (produced, error) {
	base := time.Now().Truncate(time.Millisecond)
	record := func(i int) *kgo.Record {
		id := fmt.Sprintf("pay-%d", i)
		return &kgo.Record{Topic: topic, Key: []byte(id), Value: []byte(fmt.Sprintf(`{"payment":%d,"amount":100}`, i)),
			Headers: []kgo.RecordHeader{{Key: idHeader, Value: []byte(id)}}, Timestamp: base.Add(time.Duration(i) * time.Millisecond)}
	}
	var p produced
	var batch []*kgo.Record
	var again []int
	flush := func() error {
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		p.records += len(batch)
		batch = batch[:0]
		return nil
	}
	for i := range n {
		batch = append(batch, record(i))
		p.distinct++
		if dupEvery > 0 && i%dupEvery == 0 {
			again = append(again, i)
		}
		if len(again) > 0 && i-again[0] >= 37 {
			batch = append(batch, record(again[0]))
			again = again[1:]
			p.duplicates++
		}
		if len(batch) >= 1000 {
			if err := flush(); err != nil {
				return p, err
			}
		}
	}
	for _, i := range again {
		batch = append(batch, record(i))
		p.duplicates++
	}
	return p, flush()
}

// isProducerDuplicate reports whether the payment with this id was produced twice.
func isProducerDuplicate(id string, dupEvery int) bool {
	var i int
	_, _ = fmt.Sscanf(id, "pay-%d", &i)
	return dupEvery > 0 && i%dupEvery == 0
}
