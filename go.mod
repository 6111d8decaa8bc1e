module github.com/cassdedup/cassdedup

go 1.26.0

toolchain go1.27.3

require (
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/gocql/gocql v1.7.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/golang/snappy v0.0.3 // indirect
	github.com/hailocab/go-hostpool v0.0.0-20160125115350-e80d13ce29ed // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
)
