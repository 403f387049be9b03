package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// message is one JSON-RPC 2.0 message in either direction.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *ResponseError  `json:"error,omitempty"`
}

// response is what a pending call receives.
type response struct {
	result json.RawMessage
	err    *ResponseError
}

// handler answers the server's requests and takes its notifications.
// request returns the result, or a JSON-RPC error.
type handler interface {
	request(method string, params json.RawMessage) (any, *ResponseError)
	notify(method string, params json.RawMessage)
}

// conn is a JSON-RPC client over a language server's stdio.
type conn struct {
	rwc   io.ReadWriteCloser
	fr    *frameReader
	h     handler
	grace time.Duration // how long a cancelled call waits for its answer

	wmu sync.Mutex // guards writes to rwc: one message at a time

	mu      sync.Mutex // guards the fields below
	nextID  int64
	pending map[int64]chan response
	err     error // why the connection ended; set once

	done chan struct{} // closed when the read loop has ended
}

func newConn(rwc io.ReadWriteCloser, maxBody int, h handler, grace time.Duration) *conn {
	c := &conn{
		rwc:     rwc,
		fr:      newFrameReader(rwc, maxBody),
		h:       h,
		grace:   grace,
		pending: map[int64]chan response{},
		done:    make(chan struct{}),
	}
	go c.readLoop()
	return c
}

// Done is closed when the connection has ended; Err says why.
func (c *conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (a *transportError), or nil while it
// is up.
func (c *conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// fail ends the connection with err: every pending call fails with it.
func (c *conn) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = &transportError{err: err}
	pending := c.pending
	c.pending = map[int64]chan response{}
	c.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	c.rwc.Close()
}

// close ends the connection from our side.
func (c *conn) close() { c.fail(errors.New("connection closed")) }

func (c *conn) readLoop() {
	defer close(c.done)
	for {
		body, err := c.fr.read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the server closed its output")
			}
			c.fail(err)
			return
		}
		var m message
		if err := json.Unmarshal(body, &m); err != nil {
			c.fail(fmt.Errorf("%w: message is not JSON-RPC: %v", errFraming, err))
			return
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			// Answered beside the read loop: a write that waits for the
			// server to read its stdin must never stop us reading its
			// stdout, or both sides could wait on each other.
			go c.answer(m)
		case m.Method != "":
			c.h.notify(m.Method, m.Params)
		case len(m.ID) > 0:
			c.deliver(m)
		default:
			c.fail(fmt.Errorf("%w: message is neither a request, a notification nor a response: %s", errFraming, trimForError(body)))
			return
		}
	}
}

// answer replies to a request of the server.
func (c *conn) answer(m message) {
	result, rerr := c.h.request(m.Method, m.Params)
	out := message{JSONRPC: "2.0", ID: m.ID}
	if rerr != nil {
		out.Error = rerr
	} else {
		b, err := json.Marshal(result)
		if err != nil {
			out.Error = &ResponseError{Code: -32603, Message: err.Error()}
		} else {
			out.Result = b
		}
	}
	// A failed write ends the connection; the read loop sees it next.
	c.write(out)
}

func (c *conn) deliver(m message) {
	var id int64
	if err := json.Unmarshal(m.ID, &id); err != nil {
		return // not one of ours: our ids are integers
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !ok {
		return // late answer to a cancelled call
	}
	r := response{result: m.Result, err: m.Error}
	if r.result == nil && r.err == nil {
		r.result = json.RawMessage("null")
	}
	ch <- r
}

func (c *conn) write(m message) error {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	err = writeFrame(c.rwc, b)
	c.wmu.Unlock()
	if err != nil {
		err = fmt.Errorf("writing to the server: %w", err)
		c.fail(err)
		return &transportError{err: err}
	}
	return nil
}

// notify sends a notification.
func (c *conn) notify(method string, params any) error {
	if err := c.Err(); err != nil {
		return err
	}
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.write(message{Method: method, Params: b})
}

// errCancelIgnored marks a call cancelled by the caller whose server did
// not answer within the grace after $/cancelRequest: the process is not
// to be trusted with the next query.
var errCancelIgnored = errors.New("the server did not answer a cancelled request")

// call sends a request and waits for its answer, which it decodes into
// result (a json.RawMessage pointer keeps it raw). When ctx ends first it
// sends $/cancelRequest and waits up to the grace for the server to
// answer; it returns ctx's error either way, joined with errCancelIgnored
// when the server stayed silent.
func (c *conn) call(ctx context.Context, method string, params any, result *json.RawMessage) error {
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	idb, _ := json.Marshal(id)
	if err := c.write(message{ID: idb, Method: method, Params: b}); err != nil {
		return err
	}
	select {
	case r, ok := <-ch:
		return c.result(r, ok, result)
	case <-ctx.Done():
	}
	c.notify("$/cancelRequest", map[string]int64{"id": id})
	t := time.NewTimer(c.grace)
	defer t.Stop()
	select {
	case r, ok := <-ch:
		if !ok {
			return c.Err()
		}
		_ = r // the answer (often RequestCancelled) comes too late
		return context.Cause(ctx)
	case <-t.C:
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return errors.Join(context.Cause(ctx), errCancelIgnored)
	}
}

func (c *conn) result(r response, ok bool, result *json.RawMessage) error {
	if !ok {
		return c.Err()
	}
	if r.err != nil {
		return r.err
	}
	if result != nil {
		*result = r.result
	}
	return nil
}
