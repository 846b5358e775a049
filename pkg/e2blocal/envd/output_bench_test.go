//go:build linux

package envd

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkStreamOutput measures output throughput to a reading client:
// 8 MiB printed by one process, under the default backlog limit so that no
// byte may be dropped however the producer and the stream race.
func BenchmarkStreamOutput(b *testing.B) {
	const size = 8 << 20
	e := newEnv(b)
	for _, codec := range codecs {
		b.Run(codec.name, func(b *testing.B) {
			c := e.proc(codec.opts...)
			ctx := context.Background()
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				s, err := c.Start(ctx, sh(fmt.Sprintf("head -c %d /dev/zero", size)))
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for s.Receive() {
					got += len(s.Msg().GetEvent().GetData().GetStdout())
				}
				if err := s.Err(); err != nil || got != size {
					b.Fatalf("received %d of %d bytes: %v", got, size, err)
				}
				_ = s.Close()
			}
		})
	}
}
