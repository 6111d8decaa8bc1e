// Command linkdelay holds every packet that the test cluster's router forwards for a fixed
// time before passing it on: a network delay made in user space, for kernels that lack the
// netem queueing discipline. cluster.sh runs it inside the router's network namespace and
// routes the nodes' traffic through its TUN device; a packet read from the device is written
// back to it after the delay, and the kernel then forwards it to its destination.
//
// Packets keep their order (the delay is the same for all), and none is dropped unless the
// queue of packets in flight is full. It stops on SIGTERM or SIGINT; its device goes with it,
// and the router forwards without delay again.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
	"unsafe"
)

const (
	tunSetIff = 0x400454ca // TUNSETIFF
	iffTun    = 0x0001
	iffNoPI   = 0x1000
	maxPacket = 65535
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "linkdelay:", err)
		os.Exit(1)
	}
}

func run() error {
	name := flag.String("dev", "delay0", "name of the TUN device to create")
	delay := flag.Duration("delay", time.Millisecond, "how long each packet is held")
	queue := flag.Int("queue", 65536, "packets held at most; more are dropped, as a full link would")
	flag.Parse()
	if *delay < 0 || *delay > 10*time.Second {
		return fmt.Errorf("delay %v must be between 0 and 10s", *delay)
	}
	if *queue < 1 {
		return fmt.Errorf("queue %d must be positive", *queue)
	}
	dev, err := openTUN(*name)
	if err != nil {
		return err
	}
	defer dev.Close()

	held := make(chan packet, *queue)
	failed := make(chan error, 2)
	go func() { failed <- receive(dev, held, *delay) }()
	go func() { failed <- release(dev, held) }()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	fmt.Fprintf(os.Stderr, "linkdelay: holding packets on %s for %v\n", *name, *delay)
	select {
	case <-stop:
		return nil
	case err := <-failed:
		return err
	}
}

// packet is one packet and the instant it may leave.
type packet struct {
	data []byte
	due  time.Time
}

// receive reads packets from dev and queues them with their release time; a full queue drops.
func receive(dev *os.File, held chan<- packet, delay time.Duration) error {
	for {
		buf := make([]byte, maxPacket)
		n, err := dev.Read(buf)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		select {
		case held <- packet{data: buf[:n], due: time.Now().Add(delay)}:
		default:
		}
	}
}

// release writes each queued packet back to dev once its time has come.
func release(dev *os.File, held <-chan packet) error {
	for p := range held {
		if wait := time.Until(p.due); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := dev.Write(p.data); err != nil && !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("write: %w", err)
		}
	}
	return nil
}

// openTUN creates the TUN device name (no packet information header) and returns its file.
func openTUN(name string) (*os.File, error) {
	if len(name) == 0 || len(name) > 15 {
		return nil, fmt.Errorf("device name %q must have 1 to 15 bytes", name)
	}
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	var req struct {
		name  [16]byte
		flags uint16
		_     [22]byte
	}
	copy(req.name[:], name)
	req.flags = iffTun | iffNoPI
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), tunSetIff, uintptr(unsafe.Pointer(&req))); errno != 0 {
		f.Close()
		return nil, fmt.Errorf("create %s: %w", name, errno)
	}
	return f, nil
}
