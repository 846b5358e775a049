package localaws

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// completeRequest is the body of CompleteMultipartUpload.
type completeRequest struct {
	Parts []struct {
		PartNumber int
		ETag       string
	} `xml:"Part"`
}

// maxCompleteBytes bounds the completion request: 10,000 parts of XML.
const maxCompleteBytes = 2 << 20

// complete checks the listed parts and streams them, in order, from their
// files into the backend as one object.
func (d *diskMultipart) complete(w http.ResponseWriter, r *http.Request, id string) error {
	u, err := d.lookup(id)
	if err != nil {
		return err
	}
	var req completeRequest
	if err := xml.NewDecoder(io.LimitReader(r.Body, maxCompleteBytes)).Decode(&req); err != nil {
		return s3Error{http.StatusBadRequest, "MalformedXML", "the part list is not valid XML"}
	}
	files, size, etag, err := u.assemble(req)
	if err != nil {
		return err
	}
	defer closeAll(files)
	readers := make([]io.Reader, len(files))
	for i, f := range files {
		readers[i] = f
	}
	if _, err := d.backend.PutObject(u.bucket, u.key, u.meta, io.MultiReader(readers...), size, nil); err != nil {
		return fmt.Errorf("store the assembled object: %w", err)
	}
	if _, err := d.remove(id); err == nil {
		_ = os.RemoveAll(u.dir) // parts are garbage now; a failure costs disk only
	}
	return writeXML(w, struct {
		XMLName xml.Name `xml:"CompleteMultipartUploadResult"`
		NS      string   `xml:"xmlns,attr"`
		Bucket  string
		Key     string
		ETag    string
	}{NS: s3Namespace, Bucket: u.bucket, Key: u.key, ETag: etag})
}

// assemble opens the listed parts after checking that they were uploaded,
// match their ETags and come in ascending order; it returns the files, the
// object's size and its multipart ETag.
func (u *upload) assemble(req completeRequest) (files []*os.File, size int64, etag string, err error) {
	if len(req.Parts) == 0 {
		return nil, 0, "", s3Error{http.StatusBadRequest, "MalformedXML", "no parts listed"}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	sums := md5.New()
	prev := 0
	for _, p := range req.Parts {
		stored, ok := u.parts[p.PartNumber]
		if !ok || strings.Trim(p.ETag, `"`) != strings.Trim(stored.etag, `"`) {
			closeAll(files)
			return nil, 0, "", s3Error{http.StatusBadRequest, "InvalidPart", fmt.Sprintf("part %d was not uploaded or its ETag differs", p.PartNumber)}
		}
		if p.PartNumber <= prev {
			closeAll(files)
			return nil, 0, "", s3Error{http.StatusBadRequest, "InvalidPartOrder", "parts must be listed in ascending order"}
		}
		prev = p.PartNumber
		f, err := os.Open(u.partPath(p.PartNumber))
		if err != nil {
			closeAll(files)
			return nil, 0, "", err
		}
		files = append(files, f)
		size += stored.size
		raw, _ := hex.DecodeString(strings.Trim(stored.etag, `"`)) // we wrote it
		sums.Write(raw)
	}
	return files, size, fmt.Sprintf(`"%s-%d"`, hex.EncodeToString(sums.Sum(nil)), len(req.Parts)), nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
