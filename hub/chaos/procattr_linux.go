package chaos

import "syscall"

// nodeProcAttr puts a node in its own process group, so that a signal
// reaches it and anything it starts, and has the kernel kill it if this
// process dies first.
func nodeProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
