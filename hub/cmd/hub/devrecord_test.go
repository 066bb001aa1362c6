package main

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hookhub/hookhub/hub/internal/hubdb"
	"github.com/hookhub/hookhub/internal/hubtest"
)

// hold4222 makes 127.0.0.1:4222 busy for the test: it listens there, or
// something else already does (a system NATS). Either way `hub dev`
// cannot take it.
func hold4222(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:4222")
	if err != nil {
		require.True(t, errors.Is(err, syscall.EADDRINUSE), "listen on 4222: %v", err)
		t.Log("127.0.0.1:4222 is taken already")
		return
	}
	t.Cleanup(func() { l.Close() })
}

// With 4222 taken, `hub dev` runs its NATS
// on another port and records it under HUB_DATA_DIR; status and replay,
// without HUB_NATS_URL, reach that server and say so (stderr, or the
// "nats" field of --json). The record is removed when hub dev stops. A
// stale record (its process gone, or its server silent) is ignored with a
// message, and a server without the stream is named with what is missing
// and the fix. Before, status reported "JetStream not connected" and
// replay asked for HUB_NATS_URL.
func TestCommandsFindHubDev(t *testing.T) {
	hold4222(t)
	_, dbURL := hubdb.Pool(t)
	dataDir := t.TempDir()
	httpAddr := freeAddr(t)
	for k, v := range map[string]string{
		"HUB_DATABASE_URL": dbURL, "HUB_DATA_DIR": dataDir, "HUB_NATS_URL": "",
		"HUB_HTTP_ADDR": httpAddr, "HUB_ADMIN_ADDR": freeAddr(t), "HUB_LOG_FORMAT": "text",
		"HUB_SHUTDOWN_TIMEOUT": "10s", "HUB_PADDLE_SECRETS": "",
	} {
		t.Setenv(k, v)
	}
	record := filepath.Join(dataDir, devRecordFile)

	p := hubtest.StartBinary(t, buildHub(t), nil, "dev")
	p.WaitOutput(t, "hookhub is running")
	require.Contains(t, p.Output(), record)
	rec, err := readDevRecord(record)
	require.NoError(t, err, p.Output())
	require.Equal(t, p.Pid(), rec.PID)
	require.NotEqual(t, defaultNATSURL, rec.NATSURL, "4222 is taken")
	require.Equal(t, "WEBHOOKS", rec.Stream)
	require.Contains(t, p.Output(), "Listening on this machine only (loopback)", "HUB_HTTP_ADDR is a loopback address")

	// status, as text: stderr says which server and where its URL came from.
	code, out, errOut := runCmd(t, "status")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "stream WEBHOOKS:")
	require.Contains(t, errOut, "hub: NATS "+rec.NATSURL+" (from the hub dev record "+record)

	// status --json: the "nats" field says the same.
	code, out, errOut = runCmd(t, "status", "--json")
	require.Equal(t, 0, code, errOut)
	var st struct {
		Stream *struct {
			Name string `json:"name"`
		} `json:"stream"`
		NATS natsTarget `json:"nats"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.NotNil(t, st.Stream, out)
	require.Equal(t, "WEBHOOKS", st.Stream.Name)
	require.Equal(t, natsTarget{URL: rec.NATSURL, From: fromDevRecord, Record: record, PID: rec.PID, Connected: true, Stream: "WEBHOOKS", StreamFound: true}, st.NATS)

	// replay reaches it too (it asked for HUB_NATS_URL before).
	code, _, errOut = runCmd(t, "send", "paddle", "subscription.created", "--event-id", "evt_devrecord")
	require.Equal(t, 0, code, errOut)
	var res struct {
		Matched int        `json:"matched"`
		NATS    natsTarget `json:"nats"`
	}
	require.Eventually(t, func() bool {
		code, out, errOut = runCmd(t, "replay", "--subscriber", "downgrade", "--since", "1h", "--dry-run", "--json")
		return code == 0 && json.Unmarshal([]byte(out), &res) == nil && res.Matched == 1
	}, 30*time.Second, 100*time.Millisecond, "replay: %d %s %s", code, out, errOut)
	require.Equal(t, fromDevRecord, res.NATS.From)
	require.Equal(t, rec.NATSURL, res.NATS.URL)
	code, out, errOut = runCmd(t, "replay", "--subscriber", "downgrade", "--since", "1h", "--dry-run")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "would replay 1 events")
	require.Contains(t, errOut, "hub: NATS "+rec.NATSURL+" (from the hub dev record")

	// A clean exit removes the record.
	p.Terminate(t)
	require.Equal(t, 0, p.ExitCode(t), p.Output())
	_, err = os.Stat(record)
	require.ErrorIs(t, err, os.ErrNotExist)

	// Stale records are ignored, with a message; the commands go on to the
	// default, here a NATS server without the hub's stream (the test
	// chooses it rather than whatever holds 4222).
	other := hubtest.JetStream(t)
	defer func(u string) { defaultNATSURL = u }(defaultNATSURL)
	defaultNATSURL = other.URL()
	stale := []struct {
		name string
		rec  devRecord
		want string
	}{
		{"process gone", devRecord{PID: rec.PID, NATSURL: rec.NATSURL, Stream: "WEBHOOKS"}, "its process (pid " + strconv.Itoa(rec.PID) + ") is not running"},
		{"server silent", devRecord{PID: os.Getpid(), NATSURL: "nats://" + freeAddr(t), Stream: "WEBHOOKS"}, "nothing answers at its NATS URL"},
	}
	for _, tc := range stale {
		t.Run(tc.name, func(t *testing.T) {
			remove, err := writeDevRecord(dataDir, tc.rec)
			require.NoError(t, err)
			t.Cleanup(remove)
			code, out, errOut := runCmd(t, "status")
			require.Equal(t, 1, code, errOut) // the stream is unreachable
			require.Contains(t, errOut, "hub: ignoring the stale hub dev record "+record+": "+tc.want)
			require.Contains(t, out, "stream: unavailable (stream WEBHOOKS not found on the NATS server reached, "+other.URL()+" (the default")
			require.Contains(t, out, "Start `hub dev`")

			code, _, errOut = runCmd(t, "replay", "--subscriber", "downgrade", "--since", "1h", "--dry-run")
			require.Equal(t, 1, code)
			require.Contains(t, errOut, "ignoring the stale hub dev record")
			require.Contains(t, errOut, "stream WEBHOOKS not found on the NATS server reached, "+other.URL())
			require.NotContains(t, errOut, "set HUB_NATS_URL to the NATS server the hub uses (for `hub dev`")
		})
	}

	// No record and nothing at the default: replay says what it tried.
	defaultNATSURL = "nats://" + freeAddr(t)
	code, _, errOut = runCmd(t, "replay", "--subscriber", "downgrade", "--since", "1h")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no NATS server: HUB_NATS_URL is not set, no running `hub dev` is recorded in "+record+", and nothing answers at the default "+defaultNATSURL)
}

// FuzzParseDevRecord: whatever the record file holds, parsing it neither
// panics nor accepts a record the commands cannot use.
func FuzzParseDevRecord(f *testing.F) {
	f.Add([]byte(`{"pid":12,"nats_url":"nats://127.0.0.1:4223","stream":"WEBHOOKS"}`))
	f.Add([]byte(`{"pid":-1}`))
	f.Add([]byte(`{"pid":1,"nats_url":"nats://a:1,nats://b:2"}`))
	f.Add([]byte(strings.Repeat("[", 1000)))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := parseDevRecord(b)
		if err != nil {
			return
		}
		require.Positive(t, rec.PID)
		require.True(t, strings.HasPrefix(rec.NATSURL, "nats://"))
		require.NotContains(t, rec.NATSURL, ",")
		require.LessOrEqual(t, len(b), maxDevRecordLen)
	})
}

// A record is what `hub dev` writes: a regular file naming a NATS server
// on this machine. A FIFO (or a link to a device) in its place does not
// hang the commands, and a record naming another host, credentials or
// control characters is refused: the commands would send the events they
// replay or inject there.
func TestReadDevRecordRefusesOddRecords(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	done := make(chan error, 1)
	go func() { _, err := readDevRecord(fifo); done <- err }()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "not a regular file")
	case <-time.After(10 * time.Second):
		// Unblock the reader so the test ends.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatal("reading a FIFO as the dev record hangs")
	}

	for _, u := range []string{
		"nats://evil.example.com:4222",
		"nats://10.0.0.1:4222",
		"nats://user:pass@127.0.0.1:4222",
		"nats://127.0.0.1:4222/\x1b[2J",
		"nats://127.0.0.1:notaport",
	} {
		b, err := json.Marshal(devRecord{PID: 1, NATSURL: u})
		require.NoError(t, err)
		_, err = parseDevRecord(b)
		require.Error(t, err, u)
	}
	for _, u := range []string{"nats://127.0.0.1:4223", "nats://localhost:4223", "nats://[::1]:4223"} {
		b, err := json.Marshal(devRecord{PID: 1, NATSURL: u})
		require.NoError(t, err)
		_, err = parseDevRecord(b)
		require.NoError(t, err, u)
	}
}
