package nsinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Failure is why setup failed, as stage 1 or 2 writes it (JSON) on the
// ready pipe and the driver decodes it. Unavailable marks a step this
// machine cannot provide (a kernel feature, a privilege): the driver
// returns it as its ErrUnavailable, naming Step and Fix. Otherwise only
// Err is set: the message of a setup error.
type Failure struct {
	Unavailable bool   `json:",omitempty"`
	Step        string `json:",omitempty"` // what the init tried, e.g. "install the seccomp filter"
	Err         string `json:",omitempty"` // the kernel's answer
	Fix         string `json:",omitempty"` // what the user can do
}

func (f *Failure) Error() string {
	if !f.Unavailable {
		return f.Err
	}
	msg := "cannot " + f.Step
	if f.Err != "" {
		msg += ": " + f.Err
	}
	if f.Fix != "" {
		msg += "; " + f.Fix
	}
	return msg
}

// unavailable is the error of a step this machine cannot provide.
func unavailable(step string, err error, fix string) *Failure {
	f := &Failure{Unavailable: true, Step: step, Fix: fix}
	if err != nil {
		f.Err = err.Error()
	}
	return f
}

// DecodeFailure reads what the init wrote on the ready pipe after its
// status byte. A message that is not a Failure (an init of another
// build) is returned as the text of one.
func DecodeFailure(b []byte) *Failure {
	var f Failure
	if err := json.Unmarshal(b, &f); err != nil {
		return &Failure{Err: string(b)}
	}
	return &f
}

// reportFailure tells the driver why setup failed, over the ready pipe.
func reportFailure(err error) {
	if err == nil {
		err = errors.New("native init: setup ended without starting")
	}
	f := &Failure{Err: err.Error()}
	errors.As(err, &f)
	b, jerr := json.Marshal(f)
	if jerr == nil {
		_, jerr = os.NewFile(FDReady, "ready").Write(b)
	}
	if jerr != nil {
		fmt.Fprintln(os.Stderr, "dsh init:", err)
	}
}
