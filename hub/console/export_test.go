package console

// SetMaxSessions lowers cn's cap of sessions per role (MaxSessions) for a
// test that fills it: the same cap, reached with fewer sign-ins. Call it
// before cn serves a request.
func SetMaxSessions(cn *Console, n int) {
	cn.maxSessions = n
}

// keys is the number of keys tracked.
func (l *limiter) keys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
