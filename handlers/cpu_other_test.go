//go:build !unix

package handlers

import (
	"testing"
	"time"
)

// processCPU is 0 where getrusage(2) is missing (Windows): the
// benchmarks' CPU column is not measured there.
func processCPU(testing.TB) time.Duration { return 0 }
