package bloom

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// positions holds one key's shard and bit positions. The key is hashed once: the shard comes
// from the top bits of the hash and the k bit positions from double hashing of two values mixed
// out of it, so a Rotating filter tests all its generations without hashing again. The hash is
// seedless on purpose: the same keys land on the same bits in every run, so measured
// false-positive rates are reproducible.
type positions struct {
	shard int
	bit   [maxHashes]uint64
}

func (c *core) locate(key string, p *positions) {
	h := xxhash.Sum64String(key)
	p.shard = int(h >> c.shardShift)
	h1 := fmix64(h)
	h2 := fmix64(h1^0x9e3779b97f4a7c15) | 1 // odd, so the k positions differ
	for i := range c.k {
		// Multiply-shift maps the 64-bit value onto [0, m) without a division.
		p.bit[i], _ = bits.Mul64(h1+uint64(i)*h2, c.m)
	}
}

// fmix64 is MurmurHash3's finalizer: a cheap bijection that spreads every input bit.
func fmix64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	return k
}
