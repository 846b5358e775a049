package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sessionbox/sessionbox/pkg/client"
	"github.com/sessionbox/sessionbox/pkg/local"
	"github.com/sessionbox/sessionbox/pkg/session"
)

func TestClientAgainstLocalService(t *testing.T) {
	key, err := local.NewKey("alice")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svc, err := local.Start(ctx, local.Config{DataDir: t.TempDir(), Keys: []local.Key{key}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	c := client.New(svc.URL, key.Secret, nil)
	const sid = "client-test"

	t.Run("execute buffered", func(t *testing.T) {
		res, err := c.Execute(ctx, sid, client.ExecuteRequest{Code: "x = 6\nx * 7"}, nil)
		if err != nil || !res.Success || res.Results[0].Text != "42" {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("execute streamed", func(t *testing.T) {
		var out strings.Builder
		var errs []*session.ExecError
		res, err := c.Execute(ctx, sid, client.ExecuteRequest{Code: "print('a')\nprint('b')\nraise KeyError('k')"}, func(e session.Event) {
			out.WriteString(e.Stdout)
			if e.Error != nil {
				errs = append(errs, e.Error)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if out.String() != "a\nb\n" || len(errs) != 1 || errs[0].Name != "KeyError" || res.Success {
			t.Fatalf("out %q errs %v res %+v", out.String(), errs, res)
		}
	})
	t.Run("problems are errors", func(t *testing.T) {
		_, err := c.Execute(ctx, "bad id!", client.ExecuteRequest{Code: "1"}, nil)
		var p *client.Problem
		if !errors.As(err, &p) || p.Status != http.StatusBadRequest {
			t.Fatalf("err = %v", err)
		}
		_, _, err = client.New(svc.URL, "sbx_nottherightkeyatall", nil).Sessions(ctx, 10, "")
		if !errors.As(err, &p) || p.Status != http.StatusUnauthorized {
			t.Fatalf("err = %v", err)
		}
	})
	for _, size := range []int{1 << 10, 24 << 20} {
		t.Run("upload and download "+byteSize(size), func(t *testing.T) {
			data := make([]byte, size)
			_, _ = rand.Read(data)
			e, err := c.Upload(ctx, sid, "data/blob.bin", bytes.NewReader(data), int64(size))
			if err != nil {
				t.Fatal(err)
			}
			if e.Path != "/home/user/data/blob.bin" {
				t.Fatalf("entry = %+v", e)
			}
			h := sha256.New()
			n, err := c.Download(ctx, sid, "data/blob.bin", h)
			if err != nil || n != int64(size) {
				t.Fatalf("download %d bytes: %v", n, err)
			}
			if want := sha256.Sum256(data); !bytes.Equal(h.Sum(nil), want[:]) {
				t.Fatal("downloaded bytes differ")
			}
		})
	}
	t.Run("list files and sessions", func(t *testing.T) {
		entries, err := c.ListFiles(ctx, sid, "data", 1)
		if err != nil || len(entries) != 1 || entries[0].Name != "blob.bin" {
			t.Fatalf("%+v %v", entries, err)
		}
		sessions, next, err := c.Sessions(ctx, 10, "")
		if err != nil || next != "" || len(sessions) != 1 || sessions[0].SessionID != sid || sessions[0].State != "running" {
			t.Fatalf("%+v %q %v", sessions, next, err)
		}
	})
	t.Run("stop", func(t *testing.T) {
		if _, err := c.Stop(ctx, sid); err != nil {
			t.Fatal(err)
		}
		st, err := c.Status(ctx, sid)
		if err != nil || st.State != "stopped" {
			t.Fatalf("%+v %v", st, err)
		}
	})
}

func byteSize(n int) string {
	if n >= 1<<20 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n>>10) + " KiB"
}
