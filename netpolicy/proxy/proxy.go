package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-dev/dsh/netpolicy"
)

// ErrClosed is returned by Proxy.Serve after Shutdown or Close.
var ErrClosed = errors.New("proxy: closed")

// Default limits of a Proxy.
const (
	DefaultMaxHeaderBytes   = 64 << 10
	DefaultHeaderTimeout    = 30 * time.Second
	DefaultConnectTimeout   = 10 * time.Second
	DefaultIdleTimeout      = 5 * time.Minute
	DefaultMaxConnsPerWorld = 1024
)

// Options configure a Proxy. The zero value works: world "default",
// no audit log, no metrics and the default limits.
type Options struct {
	// World names the execution world whose traffic this proxy carries. It
	// appears in every audit record and metric. If empty, "default".
	World string
	// Audit receives one JSON line per CONNECT tunnel and per forwarded
	// request (see AuditRecord). Each line is written with one Write call;
	// the proxy serialises writes. If nil, nothing is written.
	Audit io.Writer
	// Metrics, if set, counts decisions, open connections and bytes.
	Metrics *Metrics
	// Logger receives operational errors (failed audit writes, accept
	// errors). If nil, they are discarded.
	Logger *slog.Logger

	// MaxHeaderBytes caps the request line and headers of one request;
	// larger requests get 431. If zero, 64 KiB.
	MaxHeaderBytes int
	// HeaderTimeout bounds how long a client may take to send a request's
	// headers, and how long an idle keep-alive client connection stays
	// open. If zero, 30s.
	HeaderTimeout time.Duration
	// ConnectTimeout bounds resolving and connecting to an upstream. If
	// zero, 10s.
	ConnectTimeout time.Duration
	// IdleTimeout closes a CONNECT tunnel after this long without a byte
	// in either direction, and bounds waiting for an upstream's response
	// headers. If zero, 5 minutes.
	IdleTimeout time.Duration
	// MaxConnsPerWorld caps the client connections one world may hold
	// open at once; further connections get 503. If zero, 1024.
	MaxConnsPerWorld int
	// Private are other listening addresses of this process (a metrics
	// listener) that the proxy must refuse to connect to, as it refuses
	// its own listeners.
	Private []netip.AddrPort
}

// Proxy is an HTTP forward proxy (absolute-form requests) and CONNECT
// tunnel server that applies a world's egress Policy. It dials only
// through the world's guarded Dialer, so names are resolved by the proxy,
// every resolved address is checked, and the address it checked is the
// one it connects to. A Proxy implements sandbox.EgressServer.
type Proxy struct {
	opts      Options // defaults applied; never mutated after New
	w         *world  // the world whose traffic this proxy carries
	audit     *auditLog
	log       *slog.Logger
	closing   atomic.Bool
	connWG    sync.WaitGroup // one per tracked client connection
	serveDone chan struct{}  // closed by Close/Shutdown

	mu        sync.Mutex // guards the fields below
	listeners map[net.Listener]struct{}
	conns     map[*clientConn]struct{}
	selfAddrs []netip.AddrPort // listening TCP addresses
	selfAny   map[uint16]bool  // ports listened on at an unspecified address
	closeOnce sync.Once
}

// world is the per-world state shared by every connection of that world.
type world struct {
	name string
	d    atomic.Pointer[netpolicy.Dialer] // guarded; replaced by SetPolicy
	pool upPool                           // kept-alive upstream connections of forwarded requests
	open atomic.Int64                     // client connections currently open
}

// New returns a proxy that dials through d, whose Policy is the
// world's egress policy. opts may be nil. A nil d is the zero Dialer,
// whose nil Policy denies everything.
func New(d *netpolicy.Dialer, opts *Options) *Proxy {
	p := &Proxy{
		listeners: map[net.Listener]struct{}{},
		conns:     map[*clientConn]struct{}{},
		selfAny:   map[uint16]bool{},
		serveDone: make(chan struct{}),
	}
	if opts != nil {
		p.opts = *opts
	}
	o := &p.opts
	for _, ap := range o.Private {
		p.addSelfLocked(ap)
	}
	if o.World == "" {
		o.World = "default"
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxConnsPerWorld <= 0 {
		o.MaxConnsPerWorld = DefaultMaxConnsPerWorld
	}
	p.log = o.Logger
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.audit = newAuditLog(o.Audit, p.log)
	if d == nil {
		d = &netpolicy.Dialer{}
	}
	p.w = &world{name: o.World}
	p.w.d.Store(p.guardDialer(d))
	return p
}

// SetPolicy replaces the policy that judges destinations (nil denies
// everything). Connections accepted from then on, and requests on
// connections already open, are judged by pol; tunnels already
// established stay open. Idle upstream connections kept for forwarded
// requests are closed, so none judged under the old policy is reused.
func (p *Proxy) SetPolicy(pol *netpolicy.Policy) {
	if pol == nil {
		pol = netpolicy.MustNew(netpolicy.SandboxDefault())
	}
	for {
		old := p.w.d.Load()
		d := *old
		d.Policy = pol
		if p.w.d.CompareAndSwap(old, &d) {
			break
		}
	}
	p.w.pool.drop()
}

// Serve accepts connections on l and serves them until Shutdown or Close,
// then returns ErrClosed. It may be called for several listeners at
// once. Serve closes l when it returns.
func (p *Proxy) Serve(l net.Listener) error {
	if !p.trackListener(l) {
		l.Close()
		return ErrClosed
	}
	defer p.untrackListener(l)
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if p.closing.Load() {
				return ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporaryAccept(err) {
				// Out of file descriptors and the like: wait, as
				// net/http does, instead of spinning or giving up.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				p.log.Warn("proxy accept", "err", err, "retry_in", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		cc := &clientConn{p: p, c: c, w: p.w}
		if !p.trackConn(cc) {
			c.Close()
			return ErrClosed
		}
		go cc.serve()
	}
}

// isTemporaryAccept reports whether an Accept error is worth retrying
// (EMFILE, ENFILE, ECONNABORTED...).
func isTemporaryAccept(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func (p *Proxy) trackListener(l net.Listener) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing.Load() {
		return false
	}
	p.listeners[l] = struct{}{}
	if ta, ok := l.Addr().(*net.TCPAddr); ok {
		p.addSelfLocked(ta.AddrPort())
	}
	return true
}

// addSelfLocked records ap as an address of this process that must never
// be a destination. p.mu is held (or p is not yet shared).
func (p *Proxy) addSelfLocked(ap netip.AddrPort) {
	ip := ap.Addr().Unmap()
	if ip.IsUnspecified() {
		p.selfAny[ap.Port()] = true
	} else {
		p.selfAddrs = append(p.selfAddrs, netip.AddrPortFrom(ip, ap.Port()))
	}
}

func (p *Proxy) untrackListener(l net.Listener) {
	p.mu.Lock()
	delete(p.listeners, l)
	p.mu.Unlock()
	l.Close()
}

func (p *Proxy) trackConn(cc *clientConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing.Load() {
		return false
	}
	p.conns[cc] = struct{}{}
	p.connWG.Add(1)
	return true
}

func (p *Proxy) untrackConn(cc *clientConn) {
	p.mu.Lock()
	delete(p.conns, cc)
	p.mu.Unlock()
	p.connWG.Done()
}

// isSelf reports whether ap is an address this proxy listens on, so that
// a client cannot make the proxy connect to itself.
func (p *Proxy) isSelf(ap netip.AddrPort) bool {
	ip := ap.Addr().WithZone("").Unmap()
	ap = netip.AddrPortFrom(ip, ap.Port())
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.selfAddrs {
		if s == ap || (ip.IsUnspecified() && s.Port() == ap.Port()) {
			return true
		}
	}
	return p.selfAny[ap.Port()] && (ip.IsLoopback() || ip.IsUnspecified() || isLocalAddr(ip))
}

var localAddrs struct {
	once sync.Once
	set  map[netip.Addr]bool
}

// isLocalAddr reports whether ip is assigned to an interface of this host.
func isLocalAddr(ip netip.Addr) bool {
	localAddrs.once.Do(func() {
		localAddrs.set = map[netip.Addr]bool{}
		as, _ := net.InterfaceAddrs()
		for _, a := range as {
			if n, ok := a.(*net.IPNet); ok {
				if x, ok := netip.AddrFromSlice(n.IP); ok {
					localAddrs.set[x.Unmap()] = true
				}
			}
		}
	})
	return localAddrs.set[ip]
}

// Shutdown stops accepting connections, closes idle keep-alive
// connections, and waits for requests in flight and open tunnels to end.
// When ctx ends first, it closes every remaining connection and returns
// ctx's error.
func (p *Proxy) Shutdown(ctx context.Context) error {
	p.beginClose()
	// Idle connections are woken by beginClose; active ones finish their
	// request and then see p.closing. Tunnels run until either side ends.
	done := make(chan struct{})
	go func() { p.connWG.Wait(); close(done) }()
	select {
	case <-done:
		p.closeTransports()
		return nil
	case <-ctx.Done():
		p.closeConns(false)
		<-done
		p.closeTransports()
		return ctx.Err()
	}
}

// Close closes every listener and connection at once. It is idempotent.
func (p *Proxy) Close() error {
	p.beginClose()
	p.closeConns(false)
	p.connWG.Wait()
	p.closeTransports()
	return nil
}

func (p *Proxy) beginClose() {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closing.Store(true)
		for l := range p.listeners {
			l.Close()
		}
		p.mu.Unlock()
		close(p.serveDone)
	})
	p.closeConns(true)
}

// closeConns closes the idle client connections, or all of them.
func (p *Proxy) closeConns(idleOnly bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for cc := range p.conns {
		if !idleOnly {
			cc.forceClose()
			continue
		}
		if cc.state.CompareAndSwap(stateIdle, stateClosed) {
			cc.c.Close()
		}
	}
}

func (p *Proxy) closeTransports() {
	p.w.pool.closeAll()
}

// bufioReaders pools the readers of request headers; a tunnel gives its
// reader back as soon as the CONNECT request is read.
var bufioReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

var bufioWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
