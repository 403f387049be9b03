// Package ci holds the CI recipes users copy (a GitHub Actions workflow
// and a GitLab CI job that run an agent script under dsh run, through
// dsh-agent.sh) and the test that runs the commands they run.
package ci
