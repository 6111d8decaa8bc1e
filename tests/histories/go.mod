module github.com/cassdedup/cassdedup/tests/histories

go 1.26.0

toolchain go1.27.3

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/cassdedup/cassdedup v0.0.0-00010101000000-000000000000
	github.com/gocql/gocql v1.7.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang/snappy v0.0.3 // indirect
	github.com/hailocab/go-hostpool v0.0.0-20160125115350-e80d13ce29ed // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
)

replace github.com/cassdedup/cassdedup => ../..
