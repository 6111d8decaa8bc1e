package httpidem_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/httpidem"
	"github.com/cassdedup/cassdedup/lwt"
)

// The example needs a node with the schema applied (schema.Apply or cqlsh -f schema/cql/*.cql),
// so it is compiled but not run by go test.

// principal stands for what the service's authentication middleware put in the request.
func principal(r *http.Request) string { return r.Header.Get("X-Authenticated-Tenant") }

func createCharge(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/charges/ch_1")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprint(w, `{"id":"ch_1"}`)
}

func ExampleMiddleware_Handler() {
	cluster := gocql.NewCluster("127.0.0.1")
	cluster.Keyspace = "cassdedup"
	cluster.Consistency = gocql.Quorum
	cluster.RetryPolicy = nil // an LWT must never be re-sent by the driver
	session, err := cluster.CreateSession()
	if err != nil {
		log.Fatal(err)
	}
	defer session.Close()
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"), lwt.WithCache(10_000))
	if err != nil {
		log.Fatal(err)
	}
	idem, err := httpidem.New(store,
		// One tenant can never read another's stored response.
		httpidem.WithScope(principal),
		// A retry may carry another trace id: only the amount and currency must match.
		httpidem.WithFingerprint(func(r *http.Request, body []byte) ([]byte, error) {
			var charge struct {
				Amount   int64  `json:"amount"`
				Currency string `json:"currency"`
			}
			if err := json.Unmarshal(body, &charge); err != nil {
				return nil, errors.New("not a charge")
			}
			return fmt.Appendf(nil, "%s %s %d %s", r.Method, r.URL.Path, charge.Amount, charge.Currency), nil
		}),
		httpidem.WithObserver(func(e httpidem.Event) {
			if e.Err != nil && e.Outcome != httpidem.OutcomeConflict && e.Outcome != httpidem.OutcomeMismatch {
				log.Printf("idempotency %s %s: %v", e.Outcome, e.Key, e.Err)
			}
		}))
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /charges", idem.Handler(http.HandlerFunc(createCharge)))
	// With chi or gorilla/mux: r.Use(idem.Handler); with echo: e.Use(echo.WrapMiddleware(idem.Handler)).
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}
