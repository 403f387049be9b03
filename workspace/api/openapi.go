package api

import (
	_ "embed"
	"net/http"
)

// openapiJSON is the OpenAPI 3.1 document of the routes; a test checks
// that it and the route table name the same routes.
//
//go:embed openapi.json
var openapiJSON []byte

func (a *API) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openapiJSON)
}

// OpenAPI is the OpenAPI 3.1 document served at /v1/openapi.json.
func OpenAPI() []byte { return append([]byte(nil), openapiJSON...) }
