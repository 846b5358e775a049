//go:build linux

package sudo

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
)

// Main is `sudo` inside a sandbox: it returns the exit status to exit with.
func Main(args []string) int {
	o, err := parseArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sudo: %v\n", err)
		return 1
	}
	if o.noop {
		return 0
	}
	cwd, _ := os.Getwd()
	argv, env, dir, err := o.commandLine(os.Environ(), cwd)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sudo: %v\n", err)
		return 1
	}
	code, err := run(request{Argv: argv, Env: env, Dir: dir})
	if err != nil {
		fmt.Fprintf(os.Stderr, "sudo: %v\n", err)
		return 1
	}
	return code
}

func run(req request) (int, error) {
	conn, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: SocketName, Net: "unixpacket"})
	if err != nil {
		return 0, fmt.Errorf("reach the sandbox agent: %w", err)
	}
	defer conn.Close()
	oob := syscall.UnixRights(0, 1, 2)
	if _, _, err := conn.WriteMsgUnix(encode(req), oob, nil); err != nil {
		return 0, fmt.Errorf("send request: %w", err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	go func() {
		for s := range sigs {
			_, _ = conn.Write(encode(control{Signal: int(s.(syscall.Signal))}))
		}
	}()
	buf := make([]byte, 64<<10)
	n, err := conn.Read(buf)
	if err != nil {
		return 0, fmt.Errorf("read reply: %w", err)
	}
	var rep reply
	if err := json.Unmarshal(buf[:n], &rep); err != nil {
		return 0, fmt.Errorf("decode reply: %w", err)
	}
	if rep.Error != "" {
		return 0, fmt.Errorf("%s", rep.Error)
	}
	return rep.Exit, nil
}
