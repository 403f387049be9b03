// Package execworld is the execution world: the only path by which an
// agent's actions reach the machine. A World joins a workspace filesystem
// (FS), confined processes (Exec) and policed egress (Net) under one Spec
// and one Policy. Sandbox drivers implement the Backend port; execworld
// never imports a driver.
package execworld
