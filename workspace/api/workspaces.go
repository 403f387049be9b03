package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/dsh-dev/dsh/workspace"
)

// checkName validates a workspace name of a route or a create.
func checkName(name string) *apiError {
	if err := workspace.ValidName(name); err != nil {
		return &apiError{http.StatusBadRequest, codeInvalid, "workspace " + strings.TrimPrefix(err.Error(), workspace.ErrInvalid.Error()+": ")}
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

func (a *API) create(w http.ResponseWriter, r *http.Request) {
	var req workspace.CreateRequest
	if e := a.decode(w, r, &req, true); e != nil {
		writeError(w, e)
		return
	}
	// The Manager validates the request (name, template, allow
	// entries, durations, labels): one set of rules, its ErrInvalid 400.
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
	a.DropMCP(name)
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
