package localaws

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// CredentialsFile is the name, in an S3 stand-in's data dir, of the file
// holding the credentials it accepts. It is made at the first start, owner
// only (0600), and reused after, so presigned URLs handed out before a
// restart keep working.
const CredentialsFile = "credentials.json"

// storedCreds is CredentialsFile's content.
type storedCreds struct {
	AccessKeyID     string `json:"accessKeyId"`
	SecretAccessKey string `json:"secretAccessKey"`
}

// S3Credentials returns the credentials of the S3 stand-in keeping its data
// in dir, making them (random) if dir has none yet. A file that others may
// read or write is refused: its secret must be taken as known.
func S3Credentials(dir string) (aws.Credentials, error) {
	path := filepath.Join(dir, CredentialsFile)
	creds, err := readCredentials(path)
	if errors.Is(err, fs.ErrNotExist) {
		creds, err = makeCredentials(dir, path)
	}
	if err != nil {
		return aws.Credentials{}, err
	}
	return creds, nil
}

func readCredentials(path string) (aws.Credentials, error) {
	f, err := os.Open(path)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("localaws: s3 credentials: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("localaws: s3 credentials: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 || !info.Mode().IsRegular() {
		return aws.Credentials{}, fmt.Errorf("localaws: s3 credentials file %s has mode %v: others may have read it; remove it to make new credentials", path, info.Mode())
	}
	var c storedCreds
	if err := json.NewDecoder(io.LimitReader(f, 4<<10)).Decode(&c); err != nil || c.AccessKeyID == "" || c.SecretAccessKey == "" {
		return aws.Credentials{}, fmt.Errorf("localaws: s3 credentials file %s is malformed; remove it to make new credentials", path)
	}
	return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, Source: "localaws"}, nil
}

// makeCredentials writes new random credentials to path, atomically: a
// concurrent first start of the same dir either wins the rename or reads
// the winner's file.
func makeCredentials(dir, path string) (aws.Credentials, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return aws.Credentials{}, fmt.Errorf("localaws: s3 data dir: %w", err)
	}
	c := storedCreds{AccessKeyID: "SBXL" + strings.ToUpper(rand.Text()[:16]), SecretAccessKey: rand.Text() + rand.Text()}
	b, err := json.Marshal(c)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("localaws: s3 credentials: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".credentials-*") // CreateTemp makes it 0600
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("localaws: s3 credentials: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	err = errors.Join(err, tmp.Sync(), tmp.Close())
	if err == nil {
		// Link, not rename: a file another start made first is kept.
		err = os.Link(tmp.Name(), path)
		if errors.Is(err, fs.ErrExist) {
			return readCredentials(path)
		}
	}
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("localaws: write s3 credentials: %w", err)
	}
	return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, Source: "localaws"}, nil
}

// endpoints maps the endpoint of each stand-in StartS3 serves in this
// process to its credentials, so S3Client signs for it without the
// credentials passing through every caller.
var endpoints sync.Map // string → aws.Credentials

// credentialsFor is the provider S3Client signs with for endpoint: the
// stand-in's own when this process started it, else none (requests go
// unsigned; a caller reaching another store sets its own provider).
func credentialsFor(endpoint string) aws.CredentialsProvider {
	if c, ok := endpoints.Load(endpoint); ok {
		creds := c.(aws.Credentials)
		return credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, "")
	}
	return aws.AnonymousCredentials{}
}
