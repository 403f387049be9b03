package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dsh-dev/dsh/execworld"
	"github.com/dsh-dev/dsh/sandbox/docker"
)

// dockerInitDirEnv names a directory the Docker engine sees at the same
// path as dsh does. When it is set, the docker driver's worlds get a copy
// of dsh's binary made there as their init, instead of the running
// binary itself. That is what dsh needs when it runs in a container (the
// dsh image): the engine resolves a bind mount's source on its host,
// where the container's /dsh does not exist, while a directory
// bind-mounted at the same path (the compose deployment's state root) is
// the same place for both.
const dockerInitDirEnv = "DSH_DOCKER_INIT_DIR"

// newDockerBackend is the docker driver with the init of $DSH_DOCKER_INIT_DIR.
func newDockerBackend() (execworld.Backend, error) {
	opts, err := dockerOptions("")
	if err != nil {
		return nil, err
	}
	return docker.New(opts)
}

// dockerOptions are the docker driver's options: the probe's image and,
// with $DSH_DOCKER_INIT_DIR, the init copied there.
func dockerOptions(image string) (*docker.Options, error) {
	opts := &docker.Options{Image: image}
	dir := os.Getenv(dockerInitDirEnv)
	if dir == "" {
		return opts, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("$%s: finding dsh's own binary to copy: %w", dockerInitDirEnv, err)
	}
	if opts.InitPath, err = copyInit(exe, dir); err != nil {
		return nil, fmt.Errorf("$%s=%s: %w; give a writable directory the Docker engine sees at the same path (bind-mounted at the same path into dsh's container), or unset it", dockerInitDirEnv, dir, err)
	}
	return opts, nil
}

// copyInit copies the binary exe into dir as dsh-init-<sha256 prefix>
// (kept when the file there has the same content) and returns
// the copy's path. The copy is written beside its final name and renamed,
// so a world never starts a half-written init.
func copyInit(exe, dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("not an absolute path")
	}
	src, err := os.Open(exe)
	if err != nil {
		return "", err
	}
	defer src.Close()
	h := sha256.New()
	if _, err := io.Copy(h, src); err != nil {
		return "", fmt.Errorf("reading %s: %w", exe, err)
	}
	sum := h.Sum(nil)
	dst := filepath.Join(dir, "dsh-init-"+hex.EncodeToString(sum)[:16])
	// A copy already there is used only when its content is this binary's:
	// the name alone proves nothing.
	if sameContent(dst, sum) {
		return dst, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".dsh-init-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, src); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return dst, os.Rename(tmp.Name(), dst)
}

// sameContent reports whether path is a regular file whose SHA-256 is sum.
func sameContent(path string, sum []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	return bytes.Equal(h.Sum(nil), sum)
}
