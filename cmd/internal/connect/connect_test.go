package connect

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocql/gocql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, env map[string]string, args ...string) (*Config, error) {
	t.Helper()
	var c Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.Register(fs, func(k string) string { return env[k] })
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return &c, nil
}

func TestDefaultsAndEnvironment(t *testing.T) {
	c, err := parse(t, map[string]string{EnvHosts: "10.0.0.1,10.0.0.2:9142", EnvUsername: "ops", EnvPassword: "s3cret"}, "-port", "9142")
	require.NoError(t, err)
	cluster, err := c.Cluster()
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1:9142", "10.0.0.2:9142"}, cluster.Hosts)
	assert.Equal(t, 9142, cluster.Port)
	assert.Equal(t, gocql.Quorum, cluster.Consistency)
	assert.Equal(t, gocql.Serial, cluster.SerialConsistency)
	assert.Nil(t, cluster.RetryPolicy, "an LWT is never re-sent by the driver")
	assert.Zero(t, cluster.WriteCoalesceWaitTime, "the recommended session")
	assert.Equal(t, gocql.PasswordAuthenticator{Username: "ops", Password: "s3cret"}, cluster.Authenticator)
	assert.Nil(t, cluster.SslOpts)

	c, err = parse(t, nil)
	require.NoError(t, err)
	cluster, err = c.Cluster()
	require.NoError(t, err)
	assert.Equal(t, []string{"127.0.0.1:9042"}, cluster.Hosts)
	assert.Nil(t, cluster.Authenticator)
}

func TestSecretsStayOutOfTheHelp(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	c.Register(fs, func(k string) string { return map[string]string{EnvPassword: "s3cret"}[k] })
	var help strings.Builder
	fs.SetOutput(&help)
	fs.PrintDefaults()
	assert.NotContains(t, help.String(), "s3cret")
}

func TestLocalDatacenterChoosesLocalConsistencies(t *testing.T) {
	c, err := parse(t, nil, "-local-dc", "dc2")
	require.NoError(t, err)
	cluster, err := c.Cluster()
	require.NoError(t, err)
	assert.Equal(t, gocql.LocalQuorum, cluster.Consistency)
	assert.Equal(t, gocql.LocalSerial, cluster.SerialConsistency)
	assert.NotNil(t, cluster.PoolConfig.HostSelectionPolicy)

	c, err = parse(t, nil, "-local-dc", "dc2", "-consistency", "each_quorum", "-serial", "SERIAL")
	require.NoError(t, err)
	cl, serial, err := c.Consistencies()
	require.NoError(t, err)
	assert.Equal(t, gocql.EachQuorum, cl)
	assert.Equal(t, gocql.Serial, serial)
}

func TestBadSettingsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-hosts", ",,"},
		{"-hosts", "a:1,b:2"},
		{"-hosts", "a:notaport"},
		{"-hosts", "a:70000"},
		{"-consistency", "MOST"},
		{"-serial", "QUORUM"},
		{"-serial", "LOCAL_SERIAL"}, // local to whichever datacentre coordinates: refused without -local-dc
		{"-consistency", "ANY"},
		{"-password", "x"},
		{"-timeout", "0s"},
		{"-tls-cert", "c.pem"},
		{"-tls-ca", "/nonexistent/ca.pem"},
	} {
		c, err := parse(t, nil, args...)
		require.NoError(t, err, args)
		_, err = c.Cluster()
		assert.ErrorIs(t, err, ErrUsage, "%v", args)
	}
	empty := filepath.Join(t.TempDir(), "empty.pem")
	require.NoError(t, os.WriteFile(empty, []byte("not a certificate"), 0o600))
	c, err := parse(t, nil, "-tls-ca", empty)
	require.NoError(t, err)
	_, err = c.Cluster()
	assert.ErrorIs(t, err, ErrUsage)
}

func TestTLSSettings(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeCertificates(t, dir)
	c, err := parse(t, nil, "-tls-ca", ca, "-tls-cert", cert, "-tls-key", key, "-tls-server-name", "node1")
	require.NoError(t, err)
	cluster, err := c.Cluster()
	require.NoError(t, err)
	require.NotNil(t, cluster.SslOpts)
	assert.True(t, cluster.SslOpts.EnableHostVerification)
	assert.False(t, cluster.SslOpts.Config.InsecureSkipVerify)
	assert.Equal(t, "node1", cluster.SslOpts.Config.ServerName)
	assert.Len(t, cluster.SslOpts.Config.Certificates, 1)
	assert.NotNil(t, cluster.SslOpts.Config.RootCAs)

	c, err = parse(t, nil, "-tls")
	require.NoError(t, err)
	cluster, err = c.Cluster()
	require.NoError(t, err)
	assert.True(t, cluster.SslOpts.EnableHostVerification, "verification is on unless turned off explicitly")
	assert.Nil(t, cluster.SslOpts.Config.RootCAs, "the system's roots")

	c, err = parse(t, nil, "-tls-insecure-skip-verify")
	require.NoError(t, err)
	cluster, err = c.Cluster()
	require.NoError(t, err)
	assert.False(t, cluster.SslOpts.EnableHostVerification)
	assert.True(t, cluster.SslOpts.Config.InsecureSkipVerify)
}

// writeCertificates writes a self-signed certificate (the CA file) and a key pair.
func writeCertificates(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(k)
	require.NoError(t, err)
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600))
		return p
	}
	cert = write("cert.pem", "CERTIFICATE", der)
	return cert, cert, write("key.pem", "EC PRIVATE KEY", kder)
}

func FuzzContactPoints(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "a:1,b:1", "[::1]:9042", ",,", "a:b:c", "x:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, hosts string) {
		c := Config{Hosts: hosts, Port: 9042}
		got, port, err := c.contactPoints()
		if err != nil {
			if !errors.Is(err, ErrUsage) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(got) == 0 || port < 1 || port > 65535 {
			t.Fatalf("%q gave %v port %d", hosts, got, port)
		}
	})
}
