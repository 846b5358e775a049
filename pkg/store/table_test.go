package store_test

import (
	"testing"

	"github.com/sessionbox/sessionbox/pkg/store"
)

// TestCreateTableTwice checks CreateTable on both emulators: it tolerates
// their missing TTL API and an existing table.
func TestCreateTableTwice(t *testing.T) {
	t.Parallel()
	endpoints := map[string]func(*testing.T) string{
		"minidyn":  func(t *testing.T) string { _, url := minidynServer(t); return url },
		"dynalite": startDynalite,
	}
	for name, start := range endpoints {
		t.Run(name, func(t *testing.T) {
			db := client(start(t))
			table := newTable(t, db)
			if err := store.CreateTable(t.Context(), db, table); err != nil {
				t.Fatalf("second CreateTable: %v", err)
			}
		})
	}
}
