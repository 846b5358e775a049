package e2b

import (
	"io/fs"
	"time"

	"github.com/sessionbox/sessionbox/pkg/envdpb/filesystem"
)

// FileType is the kind of a filesystem entry.
type FileType string

// File types.
const (
	FileTypeFile      FileType = "file"
	FileTypeDirectory FileType = "dir"
	FileTypeSymlink   FileType = "symlink"
)

// EntryInfo describes a file or directory in a sandbox.
type EntryInfo struct {
	Name          string            `json:"name"`
	Path          string            `json:"path"`
	Type          FileType          `json:"type"`
	Size          int64             `json:"size,omitempty"`
	Mode          fs.FileMode       `json:"mode,omitempty"`
	Permissions   string            `json:"permissions,omitempty"`
	Owner         string            `json:"owner,omitempty"`
	Group         string            `json:"group,omitempty"`
	ModifiedTime  time.Time         `json:"modifiedTime,omitzero"`
	SymlinkTarget string            `json:"symlinkTarget,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
}

func fileTypeFromPB(t filesystem.FileType) FileType {
	switch t {
	case filesystem.FileType_FILE_TYPE_FILE:
		return FileTypeFile
	case filesystem.FileType_FILE_TYPE_DIRECTORY:
		return FileTypeDirectory
	case filesystem.FileType_FILE_TYPE_SYMLINK:
		return FileTypeSymlink
	}
	return ""
}

func entryFromPB(e *filesystem.EntryInfo) EntryInfo {
	if e == nil {
		return EntryInfo{}
	}
	out := EntryInfo{Name: e.GetName(), Path: e.GetPath(), Type: fileTypeFromPB(e.GetType()),
		Size: e.GetSize(), Mode: fs.FileMode(e.GetMode()), Permissions: e.GetPermissions(),
		Owner: e.GetOwner(), Group: e.GetGroup(), SymlinkTarget: e.GetSymlinkTarget(),
		Metadata: e.GetMetadata()}
	if t := e.GetModifiedTime(); t != nil {
		out.ModifiedTime = t.AsTime()
	}
	return out
}

// EventType is the kind of a filesystem change reported by a Watcher.
type EventType string

// Filesystem event types.
const (
	EventCreate EventType = "create"
	EventWrite  EventType = "write"
	EventRemove EventType = "remove"
	EventRename EventType = "rename"
	EventChmod  EventType = "chmod"
)

// FilesystemEvent is one change in a watched directory.
type FilesystemEvent struct {
	// Name is the path relative to the watched directory.
	Name string
	Type EventType
	// Entry describes the entry after the change, when WatchOptions.IncludeEntry
	// was set and the entry still exists.
	Entry *EntryInfo
}

func eventFromPB(e *filesystem.FilesystemEvent) FilesystemEvent {
	out := FilesystemEvent{Name: e.GetName()}
	switch e.GetType() {
	case filesystem.EventType_EVENT_TYPE_CREATE:
		out.Type = EventCreate
	case filesystem.EventType_EVENT_TYPE_WRITE:
		out.Type = EventWrite
	case filesystem.EventType_EVENT_TYPE_REMOVE:
		out.Type = EventRemove
	case filesystem.EventType_EVENT_TYPE_RENAME:
		out.Type = EventRename
	case filesystem.EventType_EVENT_TYPE_CHMOD:
		out.Type = EventChmod
	}
	if e.Entry != nil {
		en := entryFromPB(e.Entry)
		out.Entry = &en
	}
	return out
}
