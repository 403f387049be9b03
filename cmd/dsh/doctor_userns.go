package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// apparmorUsernsKey is the sysctl with which AppArmor (Ubuntu 23.10 and
// later, GitHub's hosted runners among them) takes every capability from
// the user namespaces an unprivileged process makes, so the native
// driver cannot set up a world there.
const apparmorUsernsKey = "kernel.apparmor_restrict_unprivileged_userns"

// usernsFixes are the ways out of the AppArmor restriction, one per
// line of dsh doctor's fix.
const usernsFixes = "run dsh as root (sudo dsh ..., the restriction is for unprivileged processes only); " +
	"or allow unprivileged user namespaces: sudo sysctl -w " + apparmorUsernsKey + "=0 " +
	"(for good: echo " + apparmorUsernsKey + "=0 | sudo tee /etc/sysctl.d/60-dsh-userns.conf); " +
	"or use the docker driver: --driver docker (DSH_SANDBOX_DRIVER=docker)"

// usernsRestriction reads AppArmor's user namespace restriction under
// sysDir (/proc/sys, injectable for tests) for a process of euid: the
// check dsh doctor lists under the native driver, and whether it keeps
// the driver from working (then its fix).
func usernsRestriction(sysDir string, euid int) (c check, blocks bool) {
	c = check{Name: "apparmor userns"}
	b, err := os.ReadFile(filepath.Join(sysDir, strings.ReplaceAll(apparmorUsernsKey, ".", "/")))
	if err != nil {
		c.OK, c.Detail = true, "no "+apparmorUsernsKey+" on this kernel: AppArmor does not restrict user namespaces"
		return c, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	switch {
	case err != nil:
		c.Detail = apparmorUsernsKey + " reads " + strconv.Quote(strings.TrimSpace(string(b))) + ", not a number"
		return c, false
	case v == 0:
		c.OK, c.Detail = true, apparmorUsernsKey+"=0: unprivileged user namespaces are allowed"
		return c, false
	case euid == 0:
		c.OK, c.Detail = true, apparmorUsernsKey+"="+strconv.Itoa(v)+", but dsh runs as root, which it does not restrict"
		return c, false
	}
	c.Detail = apparmorUsernsKey + "=" + strconv.Itoa(v) + ": AppArmor denies this unprivileged user the user namespaces the native driver needs"
	return c, true
}

// addUsernsCheck puts the AppArmor check into the native driver's report
// and, when the restriction is what keeps it from working, names the
// setting first among its problems, with the fixes.
func addUsernsCheck(rep *driverReport, sysDir string, euid int) {
	c, blocks := usernsRestriction(sysDir, euid)
	rep.Checks = append(rep.Checks, c)
	if !blocks {
		return
	}
	rep.Ready = false
	problem := "AppArmor restricts unprivileged user namespaces (" + apparmorUsernsKey + "=1)"
	if rep.Problem == "" {
		rep.Problem = problem
	} else if !strings.Contains(rep.Problem, apparmorUsernsKey) {
		rep.Problem = problem + "; " + rep.Problem
	}
	rep.Fix = usernsFixes
}
