package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/hookhub/hookhub/internal/loopback"
	"github.com/hookhub/hookhub/internal/natsembed"
)

// devRecordFile is the file `hub dev` writes under HUB_DATA_DIR while it
// runs, so that the other commands, in another shell, find its NATS
// server (which is not on 4222 when that port was taken).
const devRecordFile = "dev.json"

// maxDevRecordLen bounds what is read of a record: it is a few hundred
// bytes; anything longer is not one.
const maxDevRecordLen = 64 << 10

// defaultNATSURL is the server the commands try when HUB_NATS_URL is not
// set and no running `hub dev` is recorded: `hub dev`'s first choice.
var defaultNATSURL = fmt.Sprintf("nats://127.0.0.1:%d", natsembed.DefaultPort)

// devRecord is what `hub dev` records about itself. It holds no secret
// (the admin token is not in it).
type devRecord struct {
	PID         int       `json:"pid"`
	NATSURL     string    `json:"nats_url"`
	Stream      string    `json:"stream"`
	WebhooksURL string    `json:"webhooks_url,omitempty"`
	ConsoleURL  string    `json:"console_url,omitempty"`
	StartedAt   time.Time `json:"started_at"`
}

func devRecordPath(dataDir string) string { return filepath.Join(dataDir, devRecordFile) }

// writeDevRecord writes rec under dataDir atomically (a temporary file in
// the same directory, synced, then renamed over the record), so a reader
// never sees half a record. remove deletes it again if it is still this
// process's (another `hub dev` may have replaced it since).
func writeDevRecord(dataDir string, rec devRecord) (remove func(), err error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("dev record: %w", err)
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("dev record: %w", err)
	}
	path := devRecordPath(dataDir)
	f, err := os.CreateTemp(dataDir, "."+devRecordFile+".*")
	if err != nil {
		return nil, fmt.Errorf("dev record: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return nil, fmt.Errorf("dev record %s: %w", path, err)
	}
	return func() {
		if cur, err := readDevRecord(path); err == nil && cur.PID == rec.PID {
			_ = os.Remove(path)
		}
	}, nil
}

// readDevRecord reads and checks the record at path. An absent file is
// os.ErrNotExist (wrapped).
func readDevRecord(path string) (devRecord, error) {
	// Not following a link, and not waiting for a writer: a FIFO or a
	// device put in the record's place must not hang the commands.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return devRecord{}, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return devRecord{}, err
	} else if !st.Mode().IsRegular() {
		return devRecord{}, fmt.Errorf("not a regular file (%s): not a record of `hub dev`", st.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxDevRecordLen+1))
	if err != nil {
		return devRecord{}, err
	}
	return parseDevRecord(b)
}

// parseDevRecord decodes a record and checks what the commands use of it.
func parseDevRecord(b []byte) (devRecord, error) {
	var rec devRecord
	if len(b) > maxDevRecordLen {
		return rec, fmt.Errorf("longer than %d bytes: not a record of `hub dev`", maxDevRecordLen)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("not a record of `hub dev`: %w", err)
	}
	switch {
	case rec.PID <= 0:
		return rec, errors.New("no process id")
	case !strings.HasPrefix(rec.NATSURL, "nats://") || len(rec.NATSURL) > 1024 ||
		strings.ContainsFunc(rec.NATSURL, func(r rune) bool { return r == ',' || unicode.IsSpace(r) || unicode.IsControl(r) }):
		return rec, fmt.Errorf("nats_url %q is not one nats:// URL", oneLine(rec.NATSURL, 80))
	}
	// `hub dev` records the server it embeds, on this machine: a record
	// naming another host (or credentials) would send what the commands
	// replay and inject elsewhere.
	u, err := url.Parse(rec.NATSURL)
	switch {
	case err != nil:
		return rec, fmt.Errorf("nats_url %q is not one nats:// URL", oneLine(rec.NATSURL, 80))
	case u.User != nil:
		return rec, errors.New("nats_url carries credentials: not a record of `hub dev`")
	case !loopback.Host(u.Hostname()):
		return rec, fmt.Errorf("nats_url %q is not on this machine (127.0.0.1, ::1 or localhost): not a record of `hub dev`", oneLine(u.Redacted(), 80))
	}
	if _, err := strconv.ParseUint(u.Port(), 10, 16); err != nil {
		return rec, fmt.Errorf("nats_url %q has no port", oneLine(rec.NATSURL, 80))
	}
	return rec, nil
}

// withoutUserinfo is a URL without its user and password (a NATS URL
// recorded or printed), or raw when it does not parse.
func withoutUserinfo(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}

// processAlive reports whether a process with this id exists (signal 0:
// nothing is sent). A process of another user counts as alive.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}
