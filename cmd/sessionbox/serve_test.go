package main

import (
	"context"
	"strings"
	"testing"
)

// TestServeInternetSetting: a malformed SESSIONBOX_ALLOW_INTERNET_ACCESS is
// refused before anything starts.
func TestServeInternetSetting(t *testing.T) {
	t.Setenv("SESSIONBOX_ALLOW_INTERNET_ACCESS", "maybe")
	err := runServe(context.Background(), []string{"--data-dir", t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `"maybe" is neither true nor false`) {
		t.Fatalf("runServe: %v", err)
	}
}
