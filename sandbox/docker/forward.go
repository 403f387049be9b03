package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// ForwardArg is the hidden dsh subcommand that runs the egress forwarder
// inside a world: `dsh __egress-forward LISTEN SOCKET`.
const ForwardArg = "__egress-forward"

// proxyPort is where the forwarder listens inside every world with egress,
// on the world's own loopback.
const proxyPort = 3128

// forwardReady is the line the forwarder prints once it listens.
const forwardReady = "dsh-egress-forward: ready"

// Forward accepts TCP connections on listen (inside the world) and joins
// each to a new connection to the unix socket at socket, where the world's
// egress proxy serves. It prints forwardReady to out once it listens and
// returns when ctx ends or the listener fails.
//
// A world has no network interface but loopback, so this is its only way
// out; the proxy on the socket decides every connection under the world's
// policy. The forwarder has no privilege: a process of the world could as
// well connect to the socket itself.
func Forward(ctx context.Context, listen, socket string, out io.Writer) error {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", listen)
	if err != nil {
		return fmt.Errorf("egress forwarder: %w", err)
	}
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	fmt.Fprintln(out, forwardReady)
	var d net.Dialer
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("egress forwarder: %w", err)
		}
		go func() {
			defer c.Close()
			up, err := d.DialContext(ctx, "unix", socket)
			if err != nil {
				return // the client sees the connection close
			}
			defer up.Close()
			join(c, up)
		}()
	}
}

// join copies both ways until both directions are done, passing each
// half-close on.
func join(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
}

// ForwardMain runs Forward for the hidden subcommand (args: LISTEN SOCKET)
// and returns the process exit status.
func ForwardMain(args []string) int {
	if len(args) != 2 {
		fmt.Fprintf(os.Stderr, "usage: dsh %s LISTEN-ADDR UNIX-SOCKET (internal: started by the docker driver inside a world)\n", ForwardArg)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Forward(ctx, args[0], args[1], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dsh:", err)
		return 1
	}
	return 0
}
