package docker

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
)

// The host firewall of world networks.
//
// An internal docker network has no route to the outside, but the host's
// own addresses (the gateway, docker0, the host's other interfaces) are
// local to the host and still answer a world: a listener on 0.0.0.0 or on
// the docker bridge would be reachable. Every packet that enters the host
// from a world bridge ("br-dsh*") goes to the chain DSH-INPUT, which accepts
// only TCP to that world's proxy port on its own gateway and rejects
// everything else. Rules carry the comment "dsh:<world id>" so Reap can
// find the rules of a crashed dsh.

const (
	fwChain   = "DSH-INPUT"
	fwComment = "dsh:"
)

// fwMu serialises this process's firewall edits; iptables -w serialises
// them between processes.
var fwMu sync.Mutex

func iptables(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "iptables", append([]string{"-w", "5"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// ensureChain creates DSH-INPUT with its final reject and hooks it first in
// INPUT for every dsh bridge. Each step is checked before it is made, so
// concurrent and repeated calls leave one copy.
func ensureChain(ctx context.Context) error {
	if iptables(ctx, "-n", "-L", fwChain) != nil {
		if err := iptables(ctx, "-N", fwChain); err != nil && iptables(ctx, "-n", "-L", fwChain) != nil {
			return err
		}
	}
	if iptables(ctx, "-C", fwChain, "-j", "REJECT") != nil {
		if err := iptables(ctx, "-A", fwChain, "-j", "REJECT"); err != nil {
			return err
		}
	}
	jump := []string{"INPUT", "-i", bridgePrefix + "+", "-j", fwChain}
	if iptables(ctx, append([]string{"-C"}, jump...)...) != nil {
		if err := iptables(ctx, append([]string{"-I"}, jump...)...); err != nil {
			return err
		}
	}
	return nil
}

func allowRule(worldID, bridge string, gw netip.Addr, port uint16) []string {
	return []string{fwChain, "-i", bridge, "-d", gw.String() + "/32", "-p", "tcp", "--dport", fmt.Sprint(port),
		"-m", "comment", "--comment", fwComment + worldID, "-j", "ACCEPT"}
}

// allowProxy lets the world on bridge reach gw:port and nothing else of
// the host.
func allowProxy(ctx context.Context, worldID, bridge string, gw netip.Addr, port uint16) error {
	fwMu.Lock()
	defer fwMu.Unlock()
	if err := ensureChain(ctx); err != nil {
		return fmt.Errorf("%w: %v (the docker driver needs root and iptables to give a world egress; run dsh as root, or use the native driver)", ErrFirewall, err)
	}
	if err := iptables(ctx, append([]string{"-I"}, allowRule(worldID, bridge, gw, port)...)...); err != nil {
		return fmt.Errorf("%w: %v", ErrFirewall, err)
	}
	return nil
}

// removeRules deletes every DSH-INPUT rule of a world. The chain, its
// reject and the INPUT hook stay: they only ever reject.
func removeRules(ctx context.Context, worldID string) error {
	fwMu.Lock()
	defer fwMu.Unlock()
	out, err := exec.CommandContext(ctx, "iptables", "-w", "5", "-S", fwChain).Output()
	if err != nil {
		return nil // no chain, no rules
	}
	var errs []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "-A" || !hasComment(f, fwComment+worldID) {
			continue
		}
		f[0] = "-D"
		for i := range f {
			f[i] = strings.Trim(f[i], `"`)
		}
		if err := iptables(ctx, f...); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("docker: removing firewall rules of world %s: %s", worldID, strings.Join(errs, "; "))
	}
	return nil
}

// ruleWorlds lists the world ids that have rules in DSH-INPUT.
func ruleWorlds(ctx context.Context) []string {
	out, err := exec.CommandContext(ctx, "iptables", "-w", "5", "-S", fwChain).Output()
	if err != nil {
		return nil
	}
	var ids []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "--comment" {
				if id, ok := strings.CutPrefix(strings.Trim(f[i+1], `"`), fwComment); ok {
					ids = append(ids, id)
				}
			}
		}
	}
	return ids
}

func hasComment(f []string, c string) bool {
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "--comment" && strings.Trim(f[i+1], `"`) == c {
			return true
		}
	}
	return false
}
