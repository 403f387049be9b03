package main

import "github.com/spf13/cobra"

func newDoctorCmd() *cobra.Command { return &cobra.Command{Use: "doctor", Short: "Report what confinement is available here"} }
