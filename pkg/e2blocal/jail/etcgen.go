//go:build linux

package jail

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Sandboxes never see the host's /etc: bubblewrap started by root with the
// host's /etc bound lets sandboxed code read /etc/shadow (tried here). They
// get a generated one: the account, name service, shell start-up, time zone
// and pip files below are written by the runtime, so no host configuration
// (a pip.conf naming a private index, an /etc/environment or profile.d
// script carrying proxies or tokens) reaches a sandbox. Only distribution
// data that programs need is taken from the host (etcFromHost).
var EtcGenerated = map[string]string{
	"passwd": "root:x:0:0:root:/root:/bin/bash\n" +
		"user:x:1000:1000:user:/home/user:/bin/bash\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
	"group": "root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n",
	"hosts": "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"127.0.1.1\te2b.local e2b\n",
	"hostname":      "e2b\n",
	"resolv.conf":   "nameserver 127.0.0.1\n",
	"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n",
	"shells":        "/bin/sh\n/usr/bin/sh\n/bin/bash\n/usr/bin/bash\n",
	"timezone":      "Etc/UTC\n",
	// PATH comes from the sandbox's environment; Debian's profile would
	// replace it with one without the sbin directories.
	"profile": "if [ \"${PS1-}\" ] && [ \"${BASH-}\" ] && [ \"$BASH\" != /bin/sh ] && [ -f /etc/bash.bashrc ]; then\n" +
		"\t. /etc/bash.bashrc\n" +
		"fi\n",
	"bash.bashrc": "[ -z \"${PS1-}\" ] && return\n" +
		"shopt -s checkwinsize\n" +
		"PS1='\\u@\\h:\\w\\$ '\n",
	// Debian marks its Python as externally managed; E2B's templates let
	// `pip install` work, which this does by installing into ~/.local.
	"pip.conf": "[global]\nbreak-system-packages = true\n",
}

// netResolvConf replaces /etc/resolv.conf in sandboxes with internet
// access: slirp4netns answers DNS at that address from the host's resolver.
const netResolvConf = "nameserver " + SlirpDNS + "\n"

// SlirpDNS is where slirp4netns answers DNS inside a sandbox with internet
// access (the e2blocal runtime attaches it).
const SlirpDNS = "10.0.2.3"

// EtcZone is the sandboxes' /etc/localtime: UTC, as in E2B, whatever the
// host's zone.
const EtcZone = "/usr/share/zoneinfo/Etc/UTC"

// EtcFromHost is distribution data, copied from the host: the dynamic
// loader cache and Debian's alternatives symlinks (without them binaries
// and commands are missing), CA certificates, Python's and matplotlib's
// packaged configuration, readline's, terminal and MIME databases, and the
// release files programs check.
var EtcFromHost = []string{
	"alternatives", "ssl/certs", "ssl/openssl.cnf",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d",
	"python3", "python3.11", "python3.12", "python3.13", "matplotlibrc",
	"inputrc", "skel", "mime.types", "protocols", "services",
	"debian_version", "os-release", "magic", "magic.mime", "terminfo", "fonts",
}

// buildEtc writes the sandboxes' shared, read-only /etc into dir.
func buildEtc(dir string) error { return buildEtcFrom("/etc", dir) }

// buildEtcFrom builds it from hostEtc, the host's /etc except in tests.
func buildEtcFrom(hostEtc, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear generated etc: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create generated etc: %w", err)
	}
	for name, content := range EtcGenerated {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("write etc/%s: %w", name, err)
		}
	}
	if _, err := os.Stat(EtcZone); err == nil {
		if err := os.Symlink(EtcZone, filepath.Join(dir, "localtime")); err != nil {
			return fmt.Errorf("link etc/localtime: %w", err)
		}
	}
	for _, rel := range EtcFromHost {
		if err := copyTree(filepath.Join(hostEtc, rel), filepath.Join(dir, rel)); err != nil {
			return err
		}
	}
	return nil
}

// copyTree copies a host file, symlink or directory tree. Only world-readable
// entries are copied, so nothing private can slip in through the whitelist.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return fmt.Errorf("walk %s: %w", path, err)
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return fmt.Errorf("relative path of %s: %w", path, err)
		}
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Dir(target), err)
		}
		return copyEntry(path, target, d)
	})
}

func copyEntry(path, target string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return nil
	}
	switch {
	case d.Type()&fs.ModeSymlink != 0:
		link, err := os.Readlink(path)
		if err != nil {
			return fmt.Errorf("read link %s: %w", path, err)
		}
		if err := os.Symlink(link, target); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("symlink %s: %w", target, err)
		}
	case d.IsDir():
		if info.Mode().Perm()&0o005 != 0o005 {
			return fs.SkipDir
		}
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", target, err)
		}
	case info.Mode().IsRegular() && info.Mode().Perm()&0o004 != 0:
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", target, err)
		}
	}
	return nil
}
