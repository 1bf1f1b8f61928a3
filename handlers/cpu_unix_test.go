//go:build unix

package handlers

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time this process used so far, user and system:
// what errata's side of a call costs, whatever the database's wait.
func processCPU(b testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
