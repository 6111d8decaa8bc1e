module github.com/cassdedup/cassdedup/examples/kafka

go 1.26.0

toolchain go1.27.3

require (
	github.com/cassdedup/cassdedup v0.0.0
	github.com/cassdedup/cassdedup/kafka/kafkasub v0.0.0
	github.com/gocql/gocql v1.7.0
	github.com/stretchr/testify v1.12.1
	github.com/twmb/franz-go v1.22.2
	github.com/twmb/franz-go/pkg/kadm v1.19.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/bits-and-blooms/bloom/v3 v3.7.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang/snappy v0.0.3 // indirect
	github.com/hailocab/go-hostpool v0.0.0-20160125115350-e80d13ce29ed // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/rogpeppe/go-internal v1.14.1 // indirect
	github.com/twmb/franz-go/pkg/kmsg v1.15.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
)

replace (
	github.com/cassdedup/cassdedup => ../..
	github.com/cassdedup/cassdedup/kafka/kafkapub => ../../kafka/kafkapub
	github.com/cassdedup/cassdedup/kafka/kafkasub => ../../kafka/kafkasub
)
