//go:build !linux

package chaos

import "syscall"

// nodeProcAttr puts a node in its own process group, so that a signal
// reaches it and anything it starts.
func nodeProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
