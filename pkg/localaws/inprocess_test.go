package localaws_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/sessionbox/sessionbox/pkg/localaws"
)

// listeningSockets returns the inodes of this process's listening TCP
// sockets, from /proc.
func listeningSockets(t *testing.T) map[string]bool {
	t.Helper()
	listening := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && fields[3] == "0A" { // TCP_LISTEN
				listening[fields[9]] = true
			}
		}
		fh.Close()
	}
	fds, err := filepath.Glob("/proc/self/fd/*")
	if err != nil {
		t.Fatal(err)
	}
	mine := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fd)
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inode = strings.TrimSuffix(inode, "]")
			if listening[inode] {
				mine[inode] = true
			}
		}
	}
	return mine
}

// TestDynamoDBInProcess: the emulator local mode uses opens no port, so no
// TCP client (another local user's included) can reach its tables, while
// its own client works. Not parallel: it compares the whole process's
// listening sockets before and after, so another test's listener opened in
// between would be taken for the emulator's.
func TestDynamoDBInProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("needs /proc")
	}
	before := listeningSockets(t)
	db, err := localaws.NewDynamoDB(t.Context(), localaws.WithDataDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	client := db.Client()
	ctx := t.Context()
	localaws.CreateTestTable(t, client)
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key})
	if err != nil || out.Item == nil {
		t.Fatalf("GetItem: %v, %v", out, err)
	}
	after := listeningSockets(t)
	for inode := range after {
		if !before[inode] {
			t.Fatalf("the in-process emulator listens on a TCP socket (inode %s)", inode)
		}
	}
}
