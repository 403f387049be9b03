package pid1

import (
	"errors"
	"fmt"

	"github.com/dsh-dev/dsh/sandbox"
)

// ExplainLoss returns p whose Wait, when the connection to the init ended
// before p's exit report (ErrConnLost), adds why(): what the driver knows
// of the init's end (its signal, an OOM kill). An empty answer adds
// nothing.
func ExplainLoss(p sandbox.Process, why func() string) sandbox.Process {
	return &explained{Process: p, why: why}
}

type explained struct {
	sandbox.Process
	why func() string
}

func (p *explained) Wait() (sandbox.ExitStatus, error) {
	st, err := p.Process.Wait()
	if errors.Is(err, ErrConnLost) {
		if why := p.why(); why != "" {
			err = fmt.Errorf("%w: %s", err, why)
		}
	}
	return st, err
}
