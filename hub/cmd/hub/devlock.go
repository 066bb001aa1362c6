package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/hookhub/hookhub/hub/service"
	"github.com/hookhub/hookhub/internal/loopback"
)

// devLockFile is the lock `hub dev` holds under HUB_DATA_DIR while it
// runs: a second `hub dev` on the same directory would open a second
// JetStream server on the first one's store. The lock is flock(2)'s, so
// the kernel releases it when the process ends, however it ends: a
// crashed run leaves the file, never the lock.
const devLockFile = "dev.lock"

// errDevRunning is the refusal of a second `hub dev` on one HUB_DATA_DIR.
var errDevRunning = errors.New("another `hub dev` is running")

// lockDevDir takes dataDir's lock for this process and writes its pid in
// the lock file; unlock releases it. When another process holds it, the
// error names that process's pid and the fix, before anything is opened.
func lockDevDir(dataDir string) (unlock func(), err error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("dev lock: %w", err)
	}
	path := filepath.Join(dataDir, devLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("dev lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("dev lock %s: %w", path, err)
		}
		pid := "unknown"
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			pid = strconv.Itoa(n)
		}
		return nil, fmt.Errorf("%w (pid %s) with %s_DATA_DIR %s (it holds %s): stop it first, or give this one another %s_DATA_DIR",
			errDevRunning, pid, service.EnvPrefix, dataDir, path, service.EnvPrefix)
	}
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("dev lock %s: %w", path, err)
	}
	// The file stays: removing it would let a third run lock a new file
	// while a second still holds the old one.
	return func() { f.Close() }, nil
}

// devListenAddr is `hub dev`'s webhook listener: loopback unless
// HUB_HTTP_ADDR asks for another address, since the development secrets
// it falls back to are public. public says the address asked for
// reaches beyond this machine.
func devListenAddr(addr string, asked bool) (listen string, public bool) {
	if !asked {
		return "127.0.0.1" + addr[strings.LastIndex(addr, ":"):], false
	}
	host := addr[:max(0, strings.LastIndex(addr, ":"))]
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return addr, !loopback.Host(host)
}
