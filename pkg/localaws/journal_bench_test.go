package localaws

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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
			_, err = c.CreateTable(b.Context(), &dynamodb.CreateTableInput{
				TableName:            aws.String("t"),
				BillingMode:          types.BillingModePayPerRequest,
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			})
			if err != nil {
				b.Fatal(err)
			}
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
