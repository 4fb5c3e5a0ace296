//go:build !linux

package main

// harden does nothing outside Linux.
func harden() {}
