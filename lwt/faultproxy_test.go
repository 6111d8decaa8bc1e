package lwt

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
)

// faultProxy forwards CQL native-protocol connections to a node and, when armed, loses one
// exchange: the next request frame whose body contains a marker (a bound key value) is either
// not forwarded (the node never sees it) or forwarded with its response frame discarded (the
// node applies it; the client never hears). It parses frames (protocol v4, uncompressed), so
// the connection stays usable for every other request, as after a real lost packet and a
// driver-side timeout.
//
// It is hand-written rather than toxiproxy: toxiproxy's toxics act on byte streams, so they
// cannot lose exactly one response while the connection carries the resolving serial read.
type faultProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	marker []byte
	mode   faultMode
	times  int    // exchanges still to lose
	onLost func() // called when an exchange is lost, before its response would arrive
	lost   int
	wg     sync.WaitGroup
	conns  []net.Conn
}

type faultMode int

const (
	dropRequest faultMode = iota + 1
	dropResponse
)

const frameHeader = 9

func newFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

// arm makes the proxy lose the next n exchanges whose request contains marker.
func (p *faultProxy) arm(marker string, mode faultMode, n int, onLost func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker, p.mode, p.times, p.onLost = []byte(marker), mode, n, onLost
}

func (p *faultProxy) lostCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

func (p *faultProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *faultProxy) accept() {
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
func (p *faultProxy) request(h, body []byte, drop *streamSet) bool {
	opcode := h[4]
	if opcode != 0x07 && opcode != 0x0A { // QUERY, EXECUTE
		return true
	}
	p.mu.Lock()
	if p.times == 0 || !bytes.Contains(body, p.marker) {
		p.mu.Unlock()
		return true
	}
	p.times--
	p.lost++
	mode, onLost := p.mode, p.onLost
	p.mu.Unlock()
	if mode == dropResponse {
		drop.add(binary.BigEndian.Uint16(h[2:4]))
	}
	if onLost != nil {
		onLost()
	}
	return mode != dropRequest
}

// pipe copies frames from src to dst, skipping those keep rejects.
func (p *faultProxy) pipe(src, dst net.Conn, keep func(header, body []byte) bool) {
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
