//lint:file-ignore SA1019 feature/s3/manager is deprecated in favour of feature/s3/transfermanager, which is still v0 (pre-1.0); manager stays until its successor is stable.

package blob

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
)

func TestPartsFor(t *testing.T) {
	tests := []struct {
		size, partSize, want int64
	}{
		{24 << 20, DefaultPartSize, DefaultPartSize},
		{-1, DefaultPartSize, DefaultPartSize},
		{50 << 30, DefaultPartSize, 50<<30/int64(manager.MaxUploadParts) + 1},
	}
	for _, tc := range tests {
		u := &manager.Uploader{PartSize: tc.partSize}
		partsFor(tc.size)(u)
		if u.PartSize != tc.want {
			t.Errorf("size %d: part size %d, want %d", tc.size, u.PartSize, tc.want)
		}
		if tc.size > 0 && (tc.size+u.PartSize-1)/u.PartSize > int64(manager.MaxUploadParts) {
			t.Errorf("size %d still needs more than %d parts", tc.size, manager.MaxUploadParts)
		}
	}
}

func TestExactReader(t *testing.T) {
	tests := []struct {
		body    string
		declare int64
		wantErr bool
	}{
		{"hello", 5, false},
		{"", 0, false},
		{"hell", 5, true},
		{"hello!", 5, true},
	}
	for _, tc := range tests {
		got, err := io.ReadAll(&exactReader{r: strings.NewReader(tc.body), left: tc.declare})
		if tc.wantErr != errors.Is(err, errLength) {
			t.Errorf("%q declared %d: err %v", tc.body, tc.declare, err)
		}
		if !tc.wantErr && string(got) != tc.body {
			t.Errorf("%q declared %d: read %q", tc.body, tc.declare, got)
		}
	}
}
