package conformance

import (
	"os"
	"testing"

	"github.com/dsh-dev/dsh/sandbox/host"
)

// The suite must be able to fail. Against the unconfined host driver every
// confinement check must report a failure, and every check of execworld's
// own semantics must pass; a check that passed on the host would be a
// check that cannot catch an escape.
func TestChecksDetectAnUnconfinedDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole suite against the host")
	}
	s := setup(t, host.New(), Options{})
	_, sockErr := os.Stat("/var/run/docker.sock")
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			err := s.run(t, c)
			wantFail := c.confines
			if c.name == "DockerSocketAbsent" && sockErr != nil {
				wantFail = false // nothing to find on this host
			}
			if c.name == "RootOnlyFilesUnreadable" && os.Geteuid() != 0 {
				wantFail = false // only root can make root-owned files
			}
			switch {
			case wantFail && err == nil:
				t.Errorf("check passed on the unconfined host driver; it cannot detect an escape")
			case !wantFail && err != nil:
				t.Errorf("check failed on the host driver: %v", err)
			case err != nil:
				t.Logf("failed as it must: %v", firstLine(err.Error()))
			}
		})
	}
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
