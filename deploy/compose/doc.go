// Package compose holds the docker compose deployments of dsh (compose.yaml:
// dsh serve with the docker driver; compose.proxy.yaml: dsh proxy as an
// egress sidecar) and their end-to-end test, which make e2e-compose runs
// (go test -tags e2e): it follows README.md's commands as written.
package compose
