package pid1

import (
	"io"
	"log/slog"
	"net"
	"sync"

	"github.com/dsh-dev/dsh/sandbox"
)

// relay is the world's way out, for every driver: it listens on the
// world's loopback (the one in-world proxy address) and joins each
// connection to a new stream from the egress broker (sandbox.ServeEgress
// on the host's side). It adds and decides nothing: the proxy behind the
// stream applies the world's policy.
type relay struct {
	l   net.Listener
	log *slog.Logger
	// mu serialises requests on broker: each is one byte out and one
	// stream back.
	mu     sync.Mutex
	broker *net.UnixConn
}

// startRelay listens on addr and serves until the listener fails.
func startRelay(addr string, broker *net.UnixConn, log *slog.Logger) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	r := &relay{l: l, log: log, broker: broker}
	go r.serve()
	return nil
}

func (r *relay) serve() {
	for {
		c, err := r.l.Accept()
		if err != nil {
			r.log.Warn("egress relay stopped", "err", err)
			return
		}
		go r.join(c)
	}
}

func (r *relay) join(c net.Conn) {
	defer c.Close()
	r.mu.Lock()
	up, err := sandbox.ReceiveEgressStream(r.broker)
	r.mu.Unlock()
	if err != nil {
		r.log.Warn("egress relay", "err", err)
		return // the client sees the connection close
	}
	defer up.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		// Half-close, so request/response protocols see EOF in order.
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go pipe(up, c)
	go pipe(c, up)
	wg.Wait()
}
