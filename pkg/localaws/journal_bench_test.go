package localaws

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/sessionbox/sessionbox/pkg/inprocess"
)

// BenchmarkWrite is an UpdateItem through the in-process emulator: "memory"
// keeps nothing on disk (the baseline), "journaled" appends each write to
// the journal before answering, as serve's data dir does.
func BenchmarkWrite(b *testing.B) {
	for _, mode := range []string{"memory", "journaled"} {
		b.Run(mode, func(b *testing.B) {
			opts := []DynamoDBOption{neverSave}
			if mode == "journaled" {
				opts = append(opts, WithDataDir(b.TempDir()))
			}
			db, err := NewDynamoDB(b.Context(), opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			c := db.Client()
			CreateTestTable(b, c)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				add(b, c, fmt.Sprintf("k%d", i%100))
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkRead is a consistent GetItem through the in-process emulator:
// "sdk-defaults" is a client with the SDK's defaults over the same
// in-memory transport (signing, the endpoint rules, response checksums),
// "in-process" the client Client returns, which local mode's store uses.
func BenchmarkRead(b *testing.B) {
	db, err := NewDynamoDB(b.Context(), neverSave)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	clients := map[string]*dynamodb.Client{
		"sdk-defaults": DynamoDBClient("http://"+inProcessHost, func(o *dynamodb.Options) {
			o.HTTPClient = &http.Client{Transport: inprocess.Transport{Handler: db.h}}
		}),
		"in-process": db.Client(),
	}
	c := clients["in-process"]
	CreateTestTable(b, c)
	add(b, c, "k")
	for _, name := range []string{"sdk-defaults", "in-process"} {
		b.Run(name, func(b *testing.B) {
			c := clients[name]
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				if got := counter(b, c, "k"); got == "" {
					b.Fatal("the item is missing")
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
