// Package faultproxy is a test proxy for the CQL native protocol that loses exactly one exchange
// on demand: a request never reaches the node, or its response never reaches the client. Tests
// of outcome-unknown handling use it against a real node.
package faultproxy

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards CQL native-protocol connections to a node and, when armed, loses one
// exchange: the next request frame (a query, an execution or a batch) whose body contains a
// marker (a bound key value) is either not forwarded (the node never sees it) or forwarded with
// its response frame discarded (the node applies it; the client never hears). It parses frames
// (protocol v4, uncompressed), so the connection stays usable for every other request, as after
// a real lost packet and a driver-side timeout.
//
// It is hand-written rather than toxiproxy: toxiproxy's toxics act on byte streams, so they
// cannot lose exactly one response while the connection carries the resolving serial read.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	marker []byte
	mode   Mode
	skip   int    // matching exchanges still to let through first
	times  int    // exchanges still to lose
	onLost func() // called when an exchange is lost, before its response would arrive
	lost   int
	wg     sync.WaitGroup
	conns  []net.Conn
}

// Mode says which half of an exchange the proxy loses.
type Mode int

const (
	// DropRequest: the request is not forwarded; the node never sees it.
	DropRequest Mode = iota + 1
	// DropResponse: the request is forwarded and applied; its response is discarded.
	DropResponse
)

const frameHeader = 9

// New starts a proxy to target (host:port of a node) on a loopback port; it closes when the
// test ends.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's listening address, to give the driver as its only host.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Arm makes the proxy lose the next n exchanges whose request contains marker.
func (p *Proxy) Arm(marker string, mode Mode, n int, onLost func()) {
	p.ArmAfter(marker, mode, 0, n, onLost)
}

// ArmAfter is Arm, letting the first skip matching exchanges through before it loses any: for a
// call whose first statement carrying the marker must succeed.
func (p *Proxy) ArmAfter(marker string, mode Mode, skip, n int, onLost func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker, p.mode, p.skip, p.times, p.onLost = []byte(marker), mode, skip, n, onLost
}

// Lost is how many exchanges the proxy has lost so far.
func (p *Proxy) Lost() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		drop := &streamSet{m: map[uint16]bool{}}
		p.wg.Add(2)
		go p.pipe(client, server, func(h, body []byte) bool { return p.request(h, body, drop) })
		go p.pipe(server, client, func(h, _ []byte) bool { return !drop.take(binary.BigEndian.Uint16(h[2:4])) })
	}
}

// request decides whether a client frame is forwarded, recording streams whose response is lost.
func (p *Proxy) request(h, body []byte, drop *streamSet) bool {
	opcode := h[4]
	if opcode != 0x07 && opcode != 0x0A && opcode != 0x0D { // QUERY, EXECUTE, BATCH
		return true
	}
	p.mu.Lock()
	if p.times == 0 || !bytes.Contains(body, p.marker) {
		p.mu.Unlock()
		return true
	}
	if p.skip > 0 {
		p.skip--
		p.mu.Unlock()
		return true
	}
	p.times--
	p.lost++
	mode, onLost := p.mode, p.onLost
	p.mu.Unlock()
	if mode == DropResponse {
		drop.add(binary.BigEndian.Uint16(h[2:4]))
	}
	if onLost != nil {
		onLost()
	}
	return mode != DropRequest
}

// pipe copies frames from src to dst, skipping those keep rejects.
func (p *Proxy) pipe(src, dst net.Conn, keep func(header, body []byte) bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	h := make([]byte, frameHeader)
	for {
		if _, err := io.ReadFull(src, h); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(h[5:9])
		body := make([]byte, n)
		if _, err := io.ReadFull(src, body); err != nil {
			return
		}
		if !keep(h, body) {
			continue
		}
		if _, err := dst.Write(append(append([]byte{}, h...), body...)); err != nil {
			return
		}
	}
}

type streamSet struct {
	mu sync.Mutex
	m  map[uint16]bool
}

func (s *streamSet) add(id uint16) { s.mu.Lock(); s.m[id] = true; s.mu.Unlock() }

func (s *streamSet) take(id uint16) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[id] {
		delete(s.m, id)
		return true
	}
	return false
}
