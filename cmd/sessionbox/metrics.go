package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/sessionbox/sessionbox/pkg/session"
)

func runMetrics(ctx context.Context, args []string, getenv func(string) string) error {
	fl := newFlags(usage{name: "metrics", synopsis: []string{"[--session ID] [--samples] [--json]"},
		about: "Shows the CPU, memory and disk use of the session's sandbox, from its newest sample; --samples\n" +
			"lists those of the last 5 minutes too. It starts nothing: a session without a live sandbox is an error.", api: true})
	o := fl.apiFlags(true)
	all := fl.Bool("samples", false, "list every sample of the last 5 minutes, oldest first")
	c, err := fl.parseClient(args, o, getenv)
	if err != nil {
		return err
	}
	m, err := c.Metrics(ctx, o.session)
	if err != nil {
		return err
	}
	return o.print(m, func() error { return printMetrics(m, *all) })
}

func printMetrics(m *session.SandboxMetrics, all bool) error {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	if !all {
		fmt.Fprintf(tw, "sampled\t%s\n", when(m.Timestamp))
		fmt.Fprintf(tw, "cpu\t%.1f%% of %d\n", m.CPUUsedPct, m.CPUCount)
		fmt.Fprintf(tw, "memory\t%s of %s\n", byteCount(m.MemUsedBytes), byteCount(m.MemTotalBytes))
		fmt.Fprintf(tw, "disk\t%s of %s\n", byteCount(m.DiskUsedBytes), byteCount(m.DiskTotalBytes))
		return tw.Flush()
	}
	fmt.Fprintln(tw, "SAMPLED\tCPU %\tMEMORY\tDISK")
	for _, s := range m.Samples {
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\n", s.Timestamp.UTC().Format(time.RFC3339), s.CPUUsedPct, byteCount(s.MemUsedBytes), byteCount(s.DiskUsedBytes))
	}
	return tw.Flush()
}
