package main

// earlyEntry is the entry point (entry_amd64.s); nothing calls it.
func earlyEntry()
