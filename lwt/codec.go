package lwt

import (
	"context"
	"encoding/json"
	"fmt"
)

// Codec turns a typed result into the bytes stored with the record and back.
type Codec[T any] interface {
	Encode(T) ([]byte, error)
	Decode([]byte) (T, error)
}

// JSON is a Codec that stores results as JSON.
type JSON[T any] struct{}

// Encode marshals v.
func (JSON[T]) Encode(v T) ([]byte, error) { return json.Marshal(v) }

// Decode unmarshals b.
func (JSON[T]) Decode(b []byte) (T, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// Execute is the typed form of Store.ExecuteOnce: fn's result is encoded with codec when stored
// and decoded on every replay. replay reports whether fn ran in an earlier call.
//
// A nil store, codec or fn is ErrInvalidArgument, before anything is written.
func Execute[T any](ctx context.Context, s *Store, key Key, codec Codec[T], fn func(context.Context) (T, error), opts ...CallOption) (v T, replay bool, err error) {
	if s == nil || codec == nil || fn == nil {
		return v, false, fmt.Errorf("%w: nil store, codec or function", ErrInvalidArgument)
	}
	res, err := s.ExecuteOnce(ctx, key, func(ctx context.Context) ([]byte, error) {
		v, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		b, err := codec.Encode(v)
		if err != nil {
			// An unencodable result would fail the same way on every retry.
			return nil, Permanent(fmt.Errorf("lwt: encode result: %w", err))
		}
		return b, nil
	}, opts...)
	if err != nil {
		return v, false, err
	}
	v, err = codec.Decode(res.Value)
	if err != nil {
		return v, res.Replay, fmt.Errorf("lwt: decode stored result: %w", err)
	}
	return v, res.Replay, nil
}
