package bench

import (
	"encoding/json"
	"io"
	"time"
)

// Report is a run's whole result: its configuration and every measured phase. It is what the
// JSON file holds.
type Report struct {
	Tool       string        `json:"tool"`
	Started    time.Time     `json:"started"`
	Keyspace   string        `json:"keyspace"`
	RunID      string        `json:"run_id"`
	Baseline   string        `json:"baseline"` // the operation ratios are taken against
	Node       NodeConfig    `json:"node"`
	Client     ClientConfig  `json:"client"`
	Operations []OpInfo      `json:"operation_info"`
	Phases     []PhaseResult `json:"phases"`
	// HotCounter holds the -hot-counter cases; their latencies are in Phases too.
	HotCounter []HotCounterCase `json:"hot_counter,omitempty"`
	// Stores and Entries are a -peers run's: every server measured, and one row per (store,
	// operation, workers) with the server's durability and replication (peers.go).
	Stores  []StoreInfo `json:"stores,omitempty"`
	Entries []Entry     `json:"entries,omitempty"`
}

// OpInfo describes one operation of the run.
type OpInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReadJSON reads a report written by WriteJSON.
func ReadJSON(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, err
	}
	return &r, nil
}
