//go:build linux

package e2blocal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// The pool's memory of bursts outlives the runtime: one restarted within
// WarmPoolWindow of a burst (`sessionbox serve` stopped and started again,
// an upgrade) spawns its pool to that burst at once rather than meet the
// next one with WarmPool trees, which would spawn most of it on demand.
// It is kept in DataDir at Close; a runtime that died keeps the last one
// saved before it.

// demandFile is the burst memory's file in DataDir.
const demandFile = "pool-demand.json"

type savedDemand struct {
	Peak int       `json:"peak"` // the largest burst of creates of the window
	At   time.Time `json:"at"`   // when it last came
}

// snapshot is the largest recent burst and when it came.
func (d *demandMeter) snapshot() (peak int, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.max, d.maxAt
}

// restore takes a burst seen before this meter existed.
func (d *demandMeter) restore(peak int, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if peak > d.max {
		d.max, d.maxAt = peak, at
	}
}

// loadDemand restores the burst memory a runtime on the same DataDir saved,
// when it is recent; a missing, stale or unreadable file leaves the pool at
// WarmPool.
func (rt *Runtime) loadDemand(now time.Time) {
	path := filepath.Join(rt.cfg.DataDir, demandFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var saved savedDemand
	if err == nil {
		err = json.Unmarshal(data, &saved)
	}
	if err != nil {
		rt.log.Warn("e2blocal: the warm pool starts at its default size: its memory of bursts is unreadable", "file", path, "error", err)
		return
	}
	if saved.Peak <= 0 || saved.At.After(now) || now.Sub(saved.At) > rt.cfg.WarmPoolWindow {
		return
	}
	rt.demand.restore(min(saved.Peak, rt.cfg.WarmPoolMax), saved.At)
}

// saveDemand writes the burst memory for the next runtime on DataDir.
func (rt *Runtime) saveDemand() error {
	peak, at := rt.demand.snapshot()
	if peak <= 0 {
		return nil
	}
	data, err := json.Marshal(savedDemand{Peak: peak, At: at.UTC()})
	if err != nil {
		return fmt.Errorf("encode pool demand: %w", err)
	}
	path := filepath.Join(rt.cfg.DataDir, demandFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("save pool demand: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("save pool demand: %w", err), os.Remove(tmp))
	}
	return nil
}
