package receivertest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// modulePath is the module whose root holds ReceiverDir.
const modulePath = "github.com/hookhub/hookhub"

// ReceiverDir is the Node receiver's directory, relative to the module root.
const ReceiverDir = "subscribers/destination/testdata/receiver"

// startTimeout bounds the wait for the receiver's port line.
const startTimeout = 20 * time.Second

// NodeReceiver is a running receiver.mjs.
type NodeReceiver struct {
	url    string
	client *http.Client
}

// Node starts receiver.mjs verifying with secrets[0] (whsec_ secrets) and
// stops it when the test ends. Without node or the installed packages it
// skips t, or fails it when HOOKHUB_REQUIRE_SDK=1.
func Node(t testing.TB, secrets ...string) *NodeReceiver {
	t.Helper()
	if len(secrets) == 0 {
		t.Fatal("receivertest.Node: no secret")
	}
	node, dir, err := nodeSetup()
	if err != nil {
		if os.Getenv("HOOKHUB_REQUIRE_SDK") == "1" {
			t.Fatalf("the Node receiver is required (HOOKHUB_REQUIRE_SDK=1) but not usable: %v; run npm ci --prefix %s", err, ReceiverDir)
		}
		t.Skipf("Node receiver not usable (%v): npm ci --prefix %s", err, ReceiverDir)
	}
	cmd := exec.Command(node, "receiver.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RECEIVER_SECRETS="+strings.Join(secrets, " "))
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("receivertest.Node: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("receivertest.Node: start node: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		r := bufio.NewReader(io.LimitReader(stdout, 4096))
		s, _ := r.ReadString('\n')
		line <- s
		_, _ = io.Copy(io.Discard, stdout) // nothing else is printed; never block the process
	}()
	var first string
	select {
	case first = <-line:
	case <-time.After(startTimeout):
		t.Fatalf("receivertest.Node: no port line within %s; stderr: %s", startTimeout, stderr.String())
	}
	var ready struct {
		Port int `json:"port"`
	}
	if err := json.Unmarshal([]byte(first), &ready); err != nil || ready.Port == 0 {
		t.Fatalf("receivertest.Node: want {\"port\":N}, got %q (%v); stderr: %s", first, err, stderr.String())
	}
	return &NodeReceiver{
		url:    fmt.Sprintf("http://127.0.0.1:%d", ready.Port),
		client: &http.Client{Timeout: 10 * time.Second},
	}
}

// nodeSetup finds node and the receiver's directory with its packages
// installed.
func nodeSetup() (node, dir string, err error) {
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", err
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", "", err
	}
	dir = filepath.Join(root, filepath.FromSlash(ReceiverDir))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		return "", "", err
	}
	return node, dir, nil
}

// ModuleRoot returns the directory of the hookhub module's go.mod, found
// walking up from the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for range 64 {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modfileModule(data) == modulePath {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", fmt.Errorf("no go.mod of %s above the working directory", modulePath)
}

// modfileModule returns the module path a go.mod declares.
func modfileModule(data []byte) string {
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// URL is the receiver's base URL.
func (n *NodeReceiver) URL() string { return n.url }

// Control sets the receiver's behaviour; the Go-only knobs fail the test.
func (n *NodeReceiver) Control(t testing.TB, c Control) {
	t.Helper()
	if c.Hang || c.EndlessBody || c.RedirectLoop || c.Handler != nil {
		t.Fatal("receivertest: Hang, EndlessBody, RedirectLoop and Handler are Go receiver knobs")
	}
	body, err := json.Marshal(c.wire())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := n.client.Post(n.url+"/_control", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("receivertest: POST /_control: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		t.Fatalf("receivertest: POST /_control: %s: %s", resp.Status, msg)
	}
}

// receivedJSON is GET /_received's answer.
type receivedJSON struct {
	Accepted int        `json:"accepted"`
	Received []Received `json:"received"`
}

func (n *NodeReceiver) get(t testing.TB) receivedJSON {
	t.Helper()
	resp, err := n.client.Get(n.url + "/_received")
	if err != nil {
		t.Fatalf("receivertest: GET /_received: %v", err)
	}
	defer resp.Body.Close()
	var out receivedJSON
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("receivertest: GET /_received: %s", resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&out); err != nil {
		t.Fatalf("receivertest: GET /_received: %v", err)
	}
	return out
}

// Received returns every delivery request so far.
func (n *NodeReceiver) Received(t testing.TB) []Received {
	t.Helper()
	return n.get(t).Received
}

// Accepted returns the number of unique webhook-ids answered 2xx.
func (n *NodeReceiver) Accepted(t testing.TB) int {
	t.Helper()
	return n.get(t).Accepted
}

// syncBuffer is a bytes.Buffer safe for the process's writes and a read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil // keep the first 64 KiB
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ Receiver = (*NodeReceiver)(nil)
