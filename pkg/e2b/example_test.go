package e2b_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/sessionbox/sessionbox/pkg/e2b"
)

// The examples take E2B_API_KEY, E2B_API_URL and E2B_SANDBOX_URL from the
// environment through ConfigFromEnv; the test binary points them at an
// in-process local runtime.

func Example() {
	ctx := context.Background()
	cfg, err := e2b.ConfigFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	client, err := e2b.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	sb, err := client.Create(ctx, e2b.CreateParams{Template: "code-interpreter-v1"})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Kill(context.WithoutCancel(ctx))

	exec, err := sb.RunCode(ctx, "sum(range(10))", e2b.RunCodeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(exec.Text())
	// Output: 45
}

func ExampleClient_Create() {
	ctx := context.Background()
	cfg, err := e2b.ConfigFromEnv()
	if err != nil {
		log.Fatal(err)
	}
	client, err := e2b.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	sb, err := client.Create(ctx, e2b.CreateParams{
		Template: "base",
		Metadata: map[string]string{"session": "example"},
		Envs:     map[string]string{"GREETING": "hello"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Kill(context.WithoutCancel(ctx))

	res, err := sb.Commands().Run(ctx, "echo $GREETING from $(whoami)", e2b.CommandOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res.Stdout)
	// Output: hello from user
}

func ExampleSandbox_RunCode() {
	ctx := context.Background()
	cfg, _ := e2b.ConfigFromEnv()
	client, _ := e2b.New(cfg)
	defer client.Close()
	sb, err := client.Create(ctx, e2b.CreateParams{Template: "code-interpreter-v1"})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Kill(context.WithoutCancel(ctx))

	exec, err := sb.RunCode(ctx, "print('working')\n1/0", e2b.RunCodeOptions{
		OnStdout: func(m e2b.OutputMessage) { fmt.Print("live: ", m.Text) },
	})
	if err != nil {
		log.Fatal(err) // the sandbox or the network failed
	}
	if exec.Error != nil { // the code raised
		fmt.Println(exec.Error.Name)
	}
	// Output:
	// live: working
	// ZeroDivisionError
}

func ExampleFilesystem_Write() {
	ctx := context.Background()
	cfg, _ := e2b.ConfigFromEnv()
	client, _ := e2b.New(cfg)
	defer client.Close()
	sb, err := client.Create(ctx, e2b.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Kill(context.WithoutCancel(ctx))

	// Any io.Reader is streamed: a file, a network body, a pipe.
	entry, err := sb.Files().Write(ctx, "uploads/report.csv", strings.NewReader("a,b\n1,2\n"), e2b.WriteOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(entry.Path)
	// Output: /home/user/uploads/report.csv
}

func ExampleFilesystem_Read() {
	ctx := context.Background()
	cfg, _ := e2b.ConfigFromEnv()
	client, _ := e2b.New(cfg)
	defer client.Close()
	sb, err := client.Create(ctx, e2b.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Kill(context.WithoutCancel(ctx))
	if _, err := sb.Commands().Run(ctx, "seq 3 > numbers.txt", e2b.CommandOptions{}); err != nil {
		log.Fatal(err)
	}

	rc, err := sb.Files().Read(ctx, "numbers.txt", e2b.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	// Copy to any io.Writer (a file, an HTTP response) without buffering it all.
	var out strings.Builder
	if _, err := io.Copy(&out, rc); err != nil {
		log.Fatal(err)
	}
	fmt.Print(out.String())
	// Output:
	// 1
	// 2
	// 3
}

func ExampleClient_Kill() {
	ctx := context.Background()
	cfg, _ := e2b.ConfigFromEnv()
	client, _ := e2b.New(cfg)
	defer client.Close()
	sb, err := client.Create(ctx, e2b.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}

	fmt.Println(client.Kill(ctx, sb.ID))
	// A sandbox that is already gone is reported as such.
	err = client.Kill(ctx, sb.ID)
	fmt.Println(errors.Is(err, e2b.ErrSandboxNotFound))
	// Output:
	// <nil>
	// true
}

func ExampleClient_List() {
	ctx := context.Background()
	cfg, _ := e2b.ConfigFromEnv()
	client, _ := e2b.New(cfg)
	defer client.Close()
	sb, err := client.Create(ctx, e2b.CreateParams{Metadata: map[string]string{"owner": "list-example"}})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Kill(context.WithoutCancel(ctx))

	for info, err := range client.List(ctx, e2b.ListParams{Metadata: map[string]string{"owner": "list-example"}}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(info.SandboxID == sb.ID, info.State)
	}
	// Output: true running
}

func ExampleCommands_Start() {
	ctx := context.Background()
	cfg, _ := e2b.ConfigFromEnv()
	client, _ := e2b.New(cfg)
	defer client.Close()
	sb, err := client.Create(ctx, e2b.CreateParams{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Kill(context.WithoutCancel(ctx))

	h, err := sb.Commands().Start(ctx, "tr a-z A-Z", e2b.CommandOptions{Stdin: true})
	if err != nil {
		log.Fatal(err)
	}
	_ = h.SendStdin(ctx, []byte("shout\n"))
	_ = h.CloseStdin(ctx)
	res, err := h.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res.Stdout)
	// Output: SHOUT
}
