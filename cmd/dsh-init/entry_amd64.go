package main

// earlyEntry is the entry point (entry_amd64.s); nothing calls it.
//
//lint:ignore U1000 the linker starts the process here (-E=main.earlyEntry)
func earlyEntry()
