package httpidem_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"

	"github.com/gocql/gocql"

	"github.com/cassdedup/cassdedup/cqlsession"
	"github.com/cassdedup/cassdedup/httpidem"
	"github.com/cassdedup/cassdedup/lwt"
)

// The example needs a node with the schema applied (schema.Apply or cqlsh -f schema/cql/*.cql),
// so it is compiled but not run by go test.

// authenticate stands for the service's authentication middleware: once it has verified the
// caller, it puts the caller's account in the request's context for WithPrincipalScope.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		account, ok := verifyBearerToken(r.Header.Get("Authorization"))
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(httpidem.WithPrincipal(r.Context(), account)))
	})
}

// verifyBearerToken stands for the service's own token check.
func verifyBearerToken(header string) (account string, ok bool) {
	if header == "Bearer secret-token-of-acct-1" {
		return "acct_1", true
	}
	return "", false
}

func createCharge(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", "/charges/ch_1")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprint(w, `{"id":"ch_1"}`)
}

func ExampleMiddleware_Handler() {
	// Start from the recommended configuration: no write coalescing, token-aware routing,
	// the consistencies the stores need.
	cluster, err := cqlsession.NewCluster([]string{"127.0.0.1"})
	if err != nil {
		log.Fatal(err)
	}
	cluster.Keyspace = "cassdedup"
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
		// Keys are the caller's own: one account can never read another's stored response.
		httpidem.WithPrincipalScope(),
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
	mux.Handle("POST /charges", authenticate(idem.Handler(http.HandlerFunc(createCharge))))
	// With chi or gorilla/mux: r.Use(idem.Handler); with echo: e.Use(echo.WrapMiddleware(idem.Handler)).
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}

// New needs a decision on whose keys may meet: the authenticated principal (WithPrincipalScope),
// a hash of the Authorization header (WithAuthorizationScope), a function of the request
// (WithScope), or, for a service with a single client, one scope for all (the risky
// WithSingleTenantSharedScope). Without one it refuses to build a middleware.
func ExampleWithPrincipalScope() {
	session := &gocql.Session{} // a connected session in a real service
	store, err := lwt.NewStore(session, lwt.IdempotencyKeys("cassdedup"))
	if err != nil {
		log.Fatal(err)
	}
	_, err = httpidem.New(store)
	fmt.Println(errors.Is(err, httpidem.ErrNoScope))

	idem, err := httpidem.New(store, httpidem.WithPrincipalScope())
	if err != nil {
		log.Fatal(err)
	}
	// authenticate runs first and puts the principal in the request's context; a request that
	// reaches the middleware without one is answered 401 and never shares a scope.
	handler := authenticate(idem.Handler(http.HandlerFunc(createCharge)))
	fmt.Println(handler != nil)
	// Output:
	// true
	// true
}
