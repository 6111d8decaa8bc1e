package outbox

// Add adds the counts of o to s and keeps the older of the two Oldest: the totals of several
// passes, as the metrics adapters keep them. Shards, a gauge, is left as it is.
func (s *Stats) Add(o Stats) { s.add(o) }
