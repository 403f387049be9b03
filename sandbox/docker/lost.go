package docker

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// containerFate describes the end of a world's container once.
type containerFate struct {
	d    *Driver
	id   string
	once sync.Once
	text string
}

func (f *containerFate) describe() string {
	if f == nil {
		return ""
	}
	f.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// The container is removed once it exits (AutoRemove): what is
		// left to see depends on the race with the daemon.
		info, err := f.d.cli.ContainerInspect(ctx, f.id)
		if err != nil || info.State == nil {
			f.text = fmt.Sprintf("the world's container %.12s is gone", f.id)
			return
		}
		switch st := info.State; {
		case st.OOMKilled:
			f.text = fmt.Sprintf("the world's container %.12s was killed out of memory (tmpfs files count against the limit too); raise --memory", f.id)
		case st.Running:
			f.text = fmt.Sprintf("the world's container %.12s still runs, but the connection to its init failed", f.id)
		case st.ExitCode == 137:
			f.text = fmt.Sprintf("the world's init was killed by SIGKILL (container %.12s), from outside the world", f.id)
		default:
			f.text = fmt.Sprintf("the world's init ended with status %d (container %.12s)", st.ExitCode, f.id)
		}
	})
	return f.text
}
