package e2b

// Test-only exports for the external (integration) test package.
var (
	Goroutines          = goroutines
	WaitNoNewGoroutines = waitNoNewGoroutines
)
