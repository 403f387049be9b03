// Package client is a Go client of the workspaces REST API of dsh serve
// --http (docs/WORKSPACES.md): create, list, get, exec, files, extend,
// pause, resume and delete, with the JSON types of package workspace.
// Every error the server answers is an *Error carrying the HTTP status
// and the API's code; errors.Is matches it to workspace.ErrNotFound and
// the other sentinel errors of the contract.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-dev/dsh/workspace"
)

// Client talks to one server with one token.
type Client struct {
	base  *url.URL // scheme and host, and any path prefix, without a trailing /
	token string
	hc    *http.Client
}

// New returns a client of the server at baseURL (such as
// http://127.0.0.1:8765; the API is under its /v1). token is sent as
// "Authorization: Bearer TOKEN": the server's token, or a workspace's;
// empty sends none (a loopback server without a token). A nil hc is
// http.DefaultClient.
func New(baseURL, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http://HOST:PORT or https://HOST:PORT (such as http://127.0.0.1:8765)", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("server URL %q: must have no user, query or fragment; give only scheme, host, port and any path prefix", baseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: u, token: token, hc: hc}, nil
}

// Error is an error answer of the server: its HTTP status and the
// {"error":{"code","message"}} body (code is one of docs/WORKSPACES.md's:
// invalid, unauthorized, forbidden, not_found, conflict, too_large,
// limit, internal).
type Error struct {
	Status  int
	Code    string
	Message string
	// Method and Path are the request's.
	Method, Path string
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("%s (%s, HTTP %d)", msg, e.Code, e.Status)
}

// Is matches the API's codes to package workspace's errors: not_found
// is ErrNotFound, conflict both ErrExists and ErrConflict, invalid
// ErrInvalid, forbidden ErrForbidden, limit ErrLimit.
func (e *Error) Is(target error) bool {
	switch e.Code {
	case "not_found":
		return target == workspace.ErrNotFound
	case "conflict":
		return target == workspace.ErrExists || target == workspace.ErrConflict
	case "invalid":
		return target == workspace.ErrInvalid
	case "forbidden":
		return target == workspace.ErrForbidden
	case "limit":
		return target == workspace.ErrLimit
	}
	return false
}

// ConnError is a request that got no answer from the server (refused,
// unreachable, cut off).
type ConnError struct {
	Server string
	Err    error
}

func (e *ConnError) Error() string {
	return fmt.Sprintf("server %s did not answer: %v; is dsh serve --http running there? (--server URL or $DSH_SERVER)", e.Server, e.Err)
}

func (e *ConnError) Unwrap() error { return e.Err }

// Create creates a workspace; the answer holds its token, shown once.
func (c *Client) Create(ctx context.Context, req *workspace.CreateRequest) (*workspace.Created, error) {
	var out workspace.Created
	if err := c.doJSON(ctx, http.MethodPost, "/v1/workspaces", req, http.StatusCreated, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// List lists every workspace (the server's token only).
func (c *Client) List(ctx context.Context) ([]workspace.Workspace, error) {
	var out struct {
		Workspaces []workspace.Workspace `json:"workspaces"`
	}
	if err := c.doJSON(ctx, http.MethodGet, "/v1/workspaces", nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	return out.Workspaces, nil
}

// Get reports one workspace.
func (c *Client) Get(ctx context.Context, name string) (*workspace.Workspace, error) {
	return c.workspaceCall(ctx, http.MethodGet, name, "", nil)
}

// Delete deletes a workspace: its world, files and state.
func (c *Client) Delete(ctx context.Context, name string) error {
	p, err := wsPath(name, "")
	if err != nil {
		return err
	}
	return c.doJSON(ctx, http.MethodDelete, p, nil, http.StatusNoContent, nil)
}

// Extend moves the workspace's expiry to now+by or later.
func (c *Client) Extend(ctx context.Context, name string, by time.Duration) (*workspace.Workspace, error) {
	return c.workspaceCall(ctx, http.MethodPost, name, "/extend", map[string]string{"by": by.String()})
}

// Pause freezes the workspace's world, keeping its memory.
func (c *Client) Pause(ctx context.Context, name string) (*workspace.Workspace, error) {
	return c.workspaceCall(ctx, http.MethodPost, name, "/pause", nil)
}

// Resume thaws a paused workspace.
func (c *Client) Resume(ctx context.Context, name string) (*workspace.Workspace, error) {
	return c.workspaceCall(ctx, http.MethodPost, name, "/resume", nil)
}

func (c *Client) workspaceCall(ctx context.Context, method, name, suffix string, body any) (*workspace.Workspace, error) {
	p, err := wsPath(name, suffix)
	if err != nil {
		return nil, err
	}
	var out workspace.Workspace
	if err := c.doJSON(ctx, method, p, body, http.StatusOK, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Exec runs a command in the workspace, writing its output to stdout and
// stderr as it arrives (either may be nil to discard it), and returns how
// it ended. A command that could not start is an *Error. Canceling ctx
// ends the request, and the server ends the command.
func (c *Client) Exec(ctx context.Context, name string, req *workspace.ExecRequest, stdout, stderr io.Writer) (*workspace.ExecExit, error) {
	if req == nil || len(req.Argv) == 0 {
		return nil, fmt.Errorf("exec in %q: no command: give its argv", name)
	}
	p, err := wsPath(name, "/exec")
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(ctx, http.MethodPost, p, "", bytes.NewReader(b), "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, c.errorOf(resp, http.MethodPost, p)
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, rerr := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var ev workspace.ExecEvent
			if err := json.Unmarshal(line, &ev); err != nil {
				return nil, fmt.Errorf("exec in %q: the server sent a line that is not an exec event: %v", name, err)
			}
			if len(ev.Stdout) > 0 {
				if _, err := stdout.Write(ev.Stdout); err != nil {
					return nil, fmt.Errorf("exec in %q: writing its stdout: %w", name, err)
				}
			}
			if len(ev.Stderr) > 0 {
				if _, err := stderr.Write(ev.Stderr); err != nil {
					return nil, fmt.Errorf("exec in %q: writing its stderr: %w", name, err)
				}
			}
			if ev.Error != nil {
				return nil, &Error{Status: resp.StatusCode, Code: ev.Error.Code, Message: ev.Error.Message, Method: http.MethodPost, Path: p}
			}
			if ev.Exit != nil {
				return ev.Exit, nil
			}
		}
		if rerr != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			if rerr == io.EOF {
				rerr = io.ErrUnexpectedEOF
			}
			return nil, &ConnError{Server: c.base.String(), Err: fmt.Errorf("the exec stream of %q ended before the command's exit: %w", name, rerr)}
		}
	}
}

// ReadFile copies the workspace file at path (relative to the workspace
// root) to w and returns how many bytes it copied.
func (c *Client) ReadFile(ctx context.Context, name, path string, w io.Writer) (int64, error) {
	p, err := filePath(name, "/files/", path)
	if err != nil {
		return 0, err
	}
	resp, err := c.do(ctx, http.MethodGet, p, "", nil, "")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, c.errorOf(resp, http.MethodGet, p)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("reading %s:%s: %w", name, path, err)
	}
	return n, nil
}

// WriteFile writes r to the workspace file at path, making its parents.
// A mode of 0 leaves it to the server (0644).
func (c *Client) WriteFile(ctx context.Context, name, path string, r io.Reader, mode os.FileMode) error {
	p, err := filePath(name, "/files/", path)
	if err != nil {
		return err
	}
	q := ""
	if mode != 0 {
		q = "mode=" + fmt.Sprintf("%04o", mode.Perm())
	}
	resp, err := c.do(ctx, http.MethodPut, p, q, r, "application/octet-stream")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusOK {
		return c.errorOf(resp, http.MethodPut, p)
	}
	return nil
}

// Remove deletes a file, or an empty directory, of the workspace.
func (c *Client) Remove(ctx context.Context, name, path string) error {
	p, err := filePath(name, "/files/", path)
	if err != nil {
		return err
	}
	return c.doJSON(ctx, http.MethodDelete, p, nil, http.StatusNoContent, nil)
}

// ListDir lists a directory of the workspace ("" is its root).
func (c *Client) ListDir(ctx context.Context, name, path string) ([]workspace.Entry, error) {
	var p string
	var err error
	if strings.Trim(path, "/") == "" {
		p, err = wsPath(name, "/ls/")
	} else {
		p, err = filePath(name, "/ls/", path)
	}
	if err != nil {
		return nil, err
	}
	var out struct {
		Entries []workspace.Entry `json:"entries"`
	}
	if err := c.doJSON(ctx, http.MethodGet, p, nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	return out.Entries, nil
}

// doJSON sends body as JSON (none if nil) and decodes a want answer into
// out (ignored if nil).
func (c *Client) doJSON(ctx context.Context, method, path string, body any, want int, out any) error {
	var r io.Reader
	ctype := ""
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r, ctype = bytes.NewReader(b), "application/json"
	}
	resp, err := c.do(ctx, method, path, "", r, ctype)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return c.errorOf(resp, method, path)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: the server's answer is not the JSON the API documents: %v", method, path, err)
	}
	return nil
}

// do sends one request; path is escaped already.
func (c *Client) do(ctx context.Context, method, path, query string, body io.Reader, ctype string) (*http.Response, error) {
	u := *c.base
	u.RawPath = c.base.EscapedPath() + path
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, err
	}
	u.Path = p
	u.RawQuery = query
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, &ConnError{Server: c.base.String(), Err: err}
	}
	return resp, nil
}

// errorOf decodes an error answer; one without the documented body
// still becomes an *Error, with the status's own code.
func (c *Client) errorOf(resp *http.Response, method, path string) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error *workspace.ErrorBody `json:"error"`
	}
	e := &Error{Status: resp.StatusCode, Method: method, Path: path}
	if json.Unmarshal(b, &body) == nil && body.Error != nil && body.Error.Code != "" {
		e.Code, e.Message = body.Error.Code, body.Error.Message
		return e
	}
	e.Code = codeOfStatus(resp.StatusCode)
	msg := strings.TrimSpace(string(b))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	e.Message = fmt.Sprintf("%s %s answered HTTP %d without the API's error body (%q); is %s a dsh server?", method, path, resp.StatusCode, msg, c.base)
	return e
}

// codeOfStatus is the API's code of an HTTP status (docs/WORKSPACES.md).
func codeOfStatus(s int) string {
	switch s {
	case http.StatusBadRequest:
		return "invalid"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusConflict:
		return "conflict"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusTooManyRequests:
		return "limit"
	}
	return "internal"
}

// CheckName checks a workspace name as the API does: 1 to 63 of
// [a-z0-9-], starting with a letter or digit.
func CheckName(name string) error {
	if name == "" || len(name) > 63 {
		return fmt.Errorf("workspace name %q: must be 1 to 63 characters of a-z, 0-9 and -", name)
	}
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0) {
			return fmt.Errorf("workspace name %q: only a-z, 0-9 and - (not first) may be used", name)
		}
	}
	return nil
}

// wsPath is the escaped path of a workspace's route.
func wsPath(name, suffix string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	return "/v1/workspaces/" + name + suffix, nil
}

// filePath is the escaped path of a file route; path is relative to the
// workspace root (a leading / is dropped) and may not leave it.
func filePath(name, route, path string) (string, error) {
	p, err := wsPath(name, route)
	if err != nil {
		return "", err
	}
	rel := strings.TrimLeft(path, "/")
	if rel == "" {
		return "", fmt.Errorf("path %q in %q: name a file inside the workspace", path, name)
	}
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		if s == ".." {
			return "", fmt.Errorf("path %q in %q: .. would leave the workspace; give a path inside it", path, name)
		}
		segs[i] = url.PathEscape(s)
	}
	return p + strings.Join(segs, "/"), nil
}

// ExitStatus is the status a shell reports for how a command ended: its
// code, or 128+N for signal N (named "SIGKILL", "KILL", "9", or as Go
// prints it, "killed").
func ExitStatus(x *workspace.ExecExit) int {
	if x == nil {
		return -1
	}
	if n := signalNumber(x.Signal); n > 0 {
		return 128 + n
	}
	return x.Code
}

func signalNumber(s string) int {
	if s == "" {
		return 0
	}
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return n
	}
	if n := unix.SignalNum("SIG" + strings.TrimPrefix(strings.ToUpper(s), "SIG")); n > 0 {
		return int(n)
	}
	for n := 1; n < 65; n++ {
		if syscall.Signal(n).String() == s {
			return n
		}
	}
	return 0
}
