package api

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/workspace"
)

// Bounds of a create's inputs, beyond which it is 400.
const (
	maxLabels     = 64
	maxLabelKey   = 63
	maxLabelValue = 256
	maxAllow      = 256
	maxAllowEntry = 300
	maxImage      = 512
)

var (
	nameRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	labelKeyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
)

// checkName validates a workspace name of a route or a create.
func checkName(name string) *apiError {
	if !nameRE.MatchString(name) {
		return errorf(http.StatusBadRequest, codeInvalid, "workspace name %q: use 1 to 63 of a-z, 0-9 and -, starting with a letter or digit (such as build-42)", trunc(name))
	}
	return nil
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// decode reads the JSON body of r into v: one object, no unknown field,
// within MaxBody. An empty body is an empty object when empty is true.
func (a *API) decode(w http.ResponseWriter, r *http.Request, v any, empty bool) *apiError {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return errorf(http.StatusUnsupportedMediaType, codeInvalid, "Content-Type %q: send the body as application/json", ct)
	}
	if r.ContentLength > a.opts.MaxBody {
		return errorf(http.StatusRequestEntityTooLarge, codeTooLarge, "the request body (%d bytes) is over the server's %d-byte limit; send less", r.ContentLength, a.opts.MaxBody)
	}
	body := http.MaxBytesReader(w, r.Body, a.opts.MaxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) && empty {
			return nil
		}
		var big *http.MaxBytesError
		if errors.As(err, &big) {
			return a.classify(err)
		}
		if errors.Is(err, io.EOF) {
			return errorf(http.StatusBadRequest, codeInvalid, "the request body is empty; send a JSON object (see GET /v1/openapi.json)")
		}
		return errorf(http.StatusBadRequest, codeInvalid, "the request body is not the JSON this route takes: %v (see GET /v1/openapi.json)", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var big *http.MaxBytesError
		if errors.As(err, &big) {
			return a.classify(err)
		}
		return errorf(http.StatusBadRequest, codeInvalid, "the request body has more after its JSON object; send one object")
	}
	return nil
}

// checkCreate validates the shape of a create; the Manager validates
// what only it knows (the driver, the image, the limits' ranges, the
// TTL's maximum, the allow entries' syntax) and says ErrInvalid.
func checkCreate(req *workspace.CreateRequest) *apiError {
	if req.Name != "" {
		if e := checkName(req.Name); e != nil {
			return e
		}
	}
	if strings.ContainsAny(req.Driver, " \t\n/\x00") || len(req.Driver) > 32 {
		return errorf(http.StatusBadRequest, codeInvalid, "driver %q: name a driver such as native or docker", trunc(req.Driver))
	}
	if len(req.Image) > maxImage || strings.ContainsAny(req.Image, " \t\n\x00") {
		return errorf(http.StatusBadRequest, codeInvalid, "image %q: give an image reference such as dsh/base:latest", trunc(req.Image))
	}
	l := req.Limits
	if l.Pids < 0 {
		return errorf(http.StatusBadRequest, codeInvalid, "limits.pids %d is negative: give a process count such as 256, or 0 for the server's default", l.Pids)
	}
	if l.CPUs < 0 || math.IsNaN(l.CPUs) || math.IsInf(l.CPUs, 0) {
		return errorf(http.StatusBadRequest, codeInvalid, "limits.cpus %v: give CPUs' worth of time such as 0.5, or 0 for the server's default", l.CPUs)
	}
	if len(l.Memory) > 32 {
		return errorf(http.StatusBadRequest, codeInvalid, "limits.memory %q: give a size such as 256MiB", trunc(l.Memory))
	}
	if len(req.Allow) > maxAllow {
		return errorf(http.StatusBadRequest, codeInvalid, "allow has %d entries, over %d; allow a CIDR or *.domain instead of many hosts", len(req.Allow), maxAllow)
	}
	for i, e := range req.Allow {
		if e == "" || len(e) > maxAllowEntry || strings.ContainsAny(e, " \t\n\x00") {
			return errorf(http.StatusBadRequest, codeInvalid, "allow[%d] %q: give an entry such as example.org:443, *.example.org or 10.0.0.0/8", i, trunc(e))
		}
	}
	if len(req.Labels) > maxLabels {
		return errorf(http.StatusBadRequest, codeInvalid, "labels has %d entries, over %d", len(req.Labels), maxLabels)
	}
	for k, v := range req.Labels {
		if len(k) > maxLabelKey || !labelKeyRE.MatchString(k) {
			return errorf(http.StatusBadRequest, codeInvalid, "label key %q: use 1 to %d of A-Z, a-z, 0-9, '.', '_', '/' and '-', starting with a letter or digit", trunc(k), maxLabelKey)
		}
		if len(v) > maxLabelValue || strings.IndexByte(v, 0) >= 0 {
			return errorf(http.StatusBadRequest, codeInvalid, "label %q: its value is over %d bytes or holds a NUL byte", k, maxLabelValue)
		}
	}
	return nil
}

func (a *API) create(w http.ResponseWriter, r *http.Request) {
	var req workspace.CreateRequest
	if e := a.decode(w, r, &req, true); e != nil {
		writeError(w, e)
		return
	}
	if e := checkCreate(&req); e != nil {
		writeError(w, e)
		return
	}
	c, err := a.m.Create(r.Context(), &req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/workspaces/"+c.Workspace.Name)
	writeJSON(w, http.StatusCreated, c)
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	wss, err := a.m.List(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if wss == nil {
		wss = []workspace.Workspace{}
	}
	writeJSON(w, http.StatusOK, struct {
		Workspaces []workspace.Workspace `json:"workspaces"`
	}{wss})
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	ws, err := a.m.Get(r.Context(), r.PathValue("name"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ws)
}

func (a *API) delete(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	// The MCP sessions give the world back first: delete waits for
	// every borrower.
	a.dropMCP(name)
	if err := a.m.Delete(r.Context(), name); err != nil {
		a.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// extendRequest is the body of extend.
type extendRequest struct {
	By workspace.Duration `json:"by"`
}

func (a *API) extend(w http.ResponseWriter, r *http.Request) {
	var req extendRequest
	if e := a.decode(w, r, &req, false); e != nil {
		writeError(w, e)
		return
	}
	if req.By <= 0 {
		writeError(w, errorf(http.StatusBadRequest, codeInvalid, "extend needs a positive \"by\", such as {\"by\":\"30m\"}"))
		return
	}
	ws, err := a.m.Extend(r.Context(), r.PathValue("name"), time.Duration(req.By))
	a.answer(w, r, ws, err)
}

func (a *API) pause(w http.ResponseWriter, r *http.Request) {
	if e := a.decode(w, r, &struct{}{}, true); e != nil {
		writeError(w, e)
		return
	}
	ws, err := a.m.Pause(r.Context(), r.PathValue("name"))
	a.answer(w, r, ws, err)
}

func (a *API) resume(w http.ResponseWriter, r *http.Request) {
	if e := a.decode(w, r, &struct{}{}, true); e != nil {
		writeError(w, e)
		return
	}
	ws, err := a.m.Resume(r.Context(), r.PathValue("name"))
	a.answer(w, r, ws, err)
}

func (a *API) answer(w http.ResponseWriter, r *http.Request, ws *workspace.Workspace, err error) {
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ws)
}

// durationError says why a duration is refused.
func durationError(field string, d, max time.Duration) *apiError {
	return errorf(http.StatusBadRequest, codeInvalid, "%s %v is over the server's %v maximum; ask for less", field, d, max)
}
