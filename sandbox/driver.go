package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
)

// Names of the drivers, as users select them (--driver, sandbox.driver).
const (
	DriverNative = "native"
	DriverDocker = "docker"
	DriverHost   = "host"
)

// Labels a driver attaches to every resource it creates (containers,
// networks), beside a Spec's own, so that leftovers of a crashed dsh can
// be found and reaped. dsh's own win over a Spec's of the same key.
const (
	LabelManaged    = "dev.dsh.managed"     // "true"
	LabelWorld      = "dev.dsh.world"       // the world's ID (OpenOptions.ID)
	LabelOwnerPID   = "dev.dsh.owner.pid"   // pid of the dsh process that owns it
	LabelOwnerStart = "dev.dsh.owner.start" // that process's start time (clock ticks since boot), against pid reuse
	LabelOwnerHost  = "dev.dsh.owner.host"  // hostname of that process
)

// Optional driver capabilities. A driver implements the ones it has;
// callers find them by type assertion, so a driver without one needs no
// stub and a caller no switch over driver names. A driver that holds a
// client (the docker engine's) is also an io.Closer.

// Prober is a driver that can say what it can do on this machine
// (dsh doctor). Probe never prints and never fails: what is missing is
// in the report, with its fix.
type Prober interface {
	Probe(ctx context.Context) ProbeReport
}

// ProbeReport is what one driver can do here.
type ProbeReport struct {
	// Driver is the driver's name.
	Driver string
	// Confines reports whether the driver confines at all (host does not).
	Confines bool
	// Ready reports whether a world can be opened with it now.
	Ready bool
	// Checks are the pieces the driver needs, each with what was found.
	Checks []ProbeCheck
	// Problems say, for each missing piece, what is missing and the fix.
	Problems []string
}

// ProbeCheck is one piece a driver needs.
type ProbeCheck struct {
	Name   string
	OK     bool
	Detail string
}

// Add appends a check to the report.
func (r *ProbeReport) Add(name string, ok bool, detail string) {
	r.Checks = append(r.Checks, ProbeCheck{Name: name, OK: ok, Detail: detail})
}

// Reaper is a driver that can remove what a crashed dsh left behind
// (containers, cgroups, state directories of worlds whose owner is
// gone). Whoever opens worlds calls Reap once at start; live worlds,
// this process's or another dsh's, are left alone.
type Reaper interface {
	Reap(ctx context.Context) error
}

// OpenOptions is what a driver's Open gets beside the Spec: what is not
// data (live servers) and what the caller decided about the world (its
// ID). A nil *OpenOptions, and its zero value, work.
type OpenOptions struct {
	// ID is the world's identity, minted by the caller (execworld): the
	// driver names its containers, cgroups and state directories from it
	// and labels them with it. It must pass CheckWorldID. If empty, the
	// driver mints one.
	ID string
	// Egress serves the world's only way out when Spec.Egress is set: the
	// driver makes a listener reachable from inside the world at the one
	// in-world proxy address and hands it to Egress.Serve. Required when
	// Spec.Egress is set; ignored otherwise.
	Egress EgressServer
}

// MaxWorldIDLen bounds a world ID: it goes into container, network and
// cgroup names and unix socket paths.
const MaxWorldIDLen = 32

// CheckWorldID checks a world ID a caller passes in OpenOptions.ID:
// 1 to MaxWorldIDLen lower-case letters and digits, so it is safe in a
// path, a container name and a label, and splits from the prefixes a
// driver adds to it at a "-".
func CheckWorldID(id string) error {
	if id == "" || len(id) > MaxWorldIDLen {
		return fmt.Errorf("world ID %q: must be 1 to %d characters; let execworld mint it", id, MaxWorldIDLen)
	}
	for _, c := range id {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return fmt.Errorf("world ID %q: only lower-case letters and digits may be used; let execworld mint it", id)
		}
	}
	return nil
}

// NewWorldID returns a short random world ID: 10 hex digits, unique
// enough for one host's worlds and short enough for container and network
// names. execworld mints every world's ID with it; a driver opened
// without one (OpenOptions.ID empty) mints its own the same way.
func NewWorldID() string {
	reserved.mu.Lock()
	id := reserved.id
	reserved.id = ""
	reserved.mu.Unlock()
	if id != "" {
		return id
	}
	return mintWorldID()
}

// ReserveWorldID mints the ID the next NewWorldID call of this process
// returns: a driver that prepares a world before it is asked for
// (native.Prestart) names what it prepares after the world it will most
// likely be. A later reservation replaces an unused one.
func ReserveWorldID() string {
	id := mintWorldID()
	ReserveWorldIDOf(id)
	return id
}

// ReserveWorldIDOf reserves id, minted as NewWorldID mints them (5
// random bytes in hex) by a part of the driver that cannot call it (an
// init spawned before this package is initialised: native.Prestart).
func ReserveWorldIDOf(id string) {
	reserved.mu.Lock()
	reserved.id = id
	reserved.mu.Unlock()
}

var reserved struct {
	mu sync.Mutex
	id string
}

func mintWorldID() string {
	var b [5]byte
	rand.Read(b[:]) // never fails on Linux
	return hex.EncodeToString(b[:])
}

// Resolve returns what a driver's Open takes from o for s: the world's
// ID (o.ID checked, or a fresh one when o is nil or names none) and the
// server of its egress (EgressFor). An ID is minted only when o names
// none: it leaves a reservation to the world it was made for, and the
// process's first random bytes cost a world's start 0.1 ms.
func (o *OpenOptions) Resolve(s *Spec) (id string, egress EgressServer, err error) {
	if o != nil && o.ID != "" {
		if err := CheckWorldID(o.ID); err != nil {
			return "", nil, fmt.Errorf("sandbox: OpenOptions.ID: %w", err)
		}
		id = o.ID
	} else {
		id = NewWorldID()
	}
	egress, err = o.EgressFor(s)
	return id, egress, err
}

// EgressFor returns the server of s's egress: nil when s.Egress is
// false, an error naming the field when it is set and o gives none.
func (o *OpenOptions) EgressFor(s *Spec) (EgressServer, error) {
	if !s.Egress {
		return nil, nil
	}
	if o == nil || o.Egress == nil {
		return nil, &SpecError{Field: "Egress", Msg: "set, but no egress server was given to serve it", Fix: "pass one in OpenOptions.Egress (execworld.Open does), or leave Egress false for no network"}
	}
	return o.Egress, nil
}
