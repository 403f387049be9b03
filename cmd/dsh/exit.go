package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dsh-dev/dsh/internal/config"
)

// Exit statuses, one rule for every command (dsh help exit-codes).
const (
	statusOK     = 0
	statusFailed = 1 // the thing checked failed: denied, a tool's error
	statusUsage  = 2 // usage or configuration error
)

// failureStatusAnnotation on a command replaces statusUsage for every
// error dsh itself makes: dsh run passes its command's status through and
// so reports its own failures, usage included, as 125 (as docker run does).
const failureStatusAnnotation = "dsh-failure-status"

// exitError makes dsh exit with a specific status. An empty msg prints
// nothing (the command already reported).
type exitError struct {
	code int
	msg  string
	// jsonCode is the error's code in the --json envelope; "" derives it
	// from the status.
	jsonCode string
	jsonMsg  string // the envelope's message when not msg
	reason   string
	// extra are fields of the envelope beside "error" (dsh fetch's url).
	extra map[string]any
	cause error
	// written: the --json envelope is already on stdout.
	written bool
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) Unwrap() error { return e.cause }

// exitf returns an error that makes dsh print the message and exit with
// code. The first error among args stays reachable with errors.As.
func exitf(code int, format string, args ...any) error {
	e := &exitError{code: code, msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.cause = err
			break
		}
	}
	return e
}

// exitCode returns an error that makes dsh exit with code silently.
func exitCode(code int) error { return &exitError{code: code} }

func asExitError(err error, target **exitError) bool { return errors.As(err, target) }

// usageError is a command line dsh does not accept.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// configError is a configuration dsh cannot use.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// failureStatus is the status cmd exits with for an error of dsh's own
// (usage, configuration): 2, or the command's annotation.
func failureStatus(cmd *cobra.Command) int {
	for c := cmd; c != nil; c = c.Parent() {
		if s, ok := c.Annotations[failureStatusAnnotation]; ok {
			var n int
			if _, err := fmt.Sscan(s, &n); err == nil {
				return n
			}
		}
	}
	return statusUsage
}

// asExit turns any error of cmd into an *exitError with its status.
func asExit(cmd *cobra.Command, err error) *exitError {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee
	}
	return &exitError{code: failureStatus(cmd), msg: err.Error(), cause: err}
}

// errorBody is the "error" member of the --json envelope.
type errorBody struct {
	Code     string         `json:"code"`
	Message  string         `json:"message"`
	Reason   string         `json:"reason,omitempty"`
	Problems []errorProblem `json:"problems"`
}

// errorProblem is one problem of an error: a configuration key and what
// is wrong with it, or just what is wrong.
type errorProblem struct {
	Key     string `json:"key"`
	Message string `json:"message"`
}

// envelope is the one --json answer of every command that fails:
// {"error":{"code","message","problems":[{"key","message"}]}}, with the
// command's own fields beside it where it documents some.
func envelope(ee *exitError) map[string]any {
	msg := ee.msg
	if ee.jsonMsg != "" {
		msg = ee.jsonMsg
	}
	body := errorBody{Code: ee.jsonCode, Message: msg, Reason: ee.reason, Problems: []errorProblem{}}
	var ce *configError
	var ue *usageError
	var te *untrustedError
	switch {
	case body.Code != "":
	case errors.As(ee, &te):
		body.Code = "CONFIG_UNTRUSTED"
	case errors.As(ee, &ce):
		body.Code = "CONFIG_INVALID"
	case errors.As(ee, &ue):
		body.Code = "USAGE"
	default:
		body.Code = statusCodeName(ee.code)
	}
	var es config.Errors
	if errors.As(ee, &es) {
		for _, p := range es {
			var ke *config.KeyError
			if errors.As(p, &ke) {
				body.Problems = append(body.Problems, errorProblem{Key: ke.Key, Message: ke.Msg})
			} else {
				body.Problems = append(body.Problems, errorProblem{Message: p.Error()})
			}
		}
	}
	out := map[string]any{"error": body}
	for k, v := range ee.extra {
		out[k] = v
	}
	return out
}

// statusCodeName names an exit status in the envelope.
func statusCodeName(code int) string {
	switch code {
	case statusUsage:
		return "USAGE"
	case statusDshFailed:
		return "DSH_FAILED"
	case statusNotExecutable:
		return "NOT_EXECUTABLE"
	case statusNotFound:
		return "NOT_FOUND"
	case 130:
		return "INTERRUPTED"
	}
	return "FAILED"
}

// writeErrorJSON writes ee's envelope to w once. Every --json error goes
// through here.
func writeErrorJSON(w io.Writer, ee *exitError) {
	if ee.written || ee.msg == "" {
		return
	}
	ee.written = true
	_ = writeJSON(w, envelope(ee))
}

// wantsJSON reports whether cmd was asked for --json.
func wantsJSON(cmd *cobra.Command) bool {
	f := cmd.Flags().Lookup("json")
	return f != nil && f.Value.String() == "true"
}

// argsWantJSON reports whether a command line asks for --json before any
// "--", for errors cobra reports before parsing the flags.
func argsWantJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--json" || strings.HasPrefix(a, "--json=") && a != "--json=false" {
			return true
		}
	}
	return false
}

// contractCommands gives every command of the tree the exit-code and
// JSON rules: usage errors (flags, arguments) are usageErrors with the
// command's failure status, and every error of a --json command leaves
// its envelope on stdout.
func contractCommands(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return report(cmd, &usageError{err})
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Args != nil {
			args := c.Args
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return report(cmd, &usageError{err})
				}
				return nil
			}
		}
		if c.RunE != nil {
			runE := c.RunE
			c.RunE = func(cmd *cobra.Command, a []string) error {
				err := runE(cmd, a)
				if err == nil {
					return nil
				}
				return report(cmd, err)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// report turns err into cmd's *exitError and, under --json, writes its
// envelope.
func report(cmd *cobra.Command, err error) error {
	ee := asExit(cmd, err)
	if wantsJSON(cmd) {
		writeErrorJSON(cmd.OutOrStdout(), ee)
	}
	return ee
}

// groupRunE is the RunE of a command that only groups others: without
// arguments it prints its help, and an unknown subcommand is a usage
// error with suggestions (cobra would print the help and exit 0).
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	msg += fmt.Sprintf("\n\nRun '%s --help' for usage.", cmd.CommandPath())
	return &usageError{errors.New(msg)}
}
