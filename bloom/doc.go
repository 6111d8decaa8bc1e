// Package bloom is a concurrency-safe, time-rotating Bloom filter used as a pre-check that lets
// a process skip the lightweight transaction for operations it knows to be new.
package bloom
