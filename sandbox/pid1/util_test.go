package pid1

import (
	"context"
	"os"
)

var errCanceled = context.Canceled

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

func writeFile(name, content string, mode os.FileMode) error {
	if err := os.WriteFile(name, []byte(content), mode); err != nil {
		return err
	}
	return os.Chmod(name, mode)
}
