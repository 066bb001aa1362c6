package console

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The sign-in limiters and the session pools hold bounded memory whatever
// the number of addresses and sign-ins.
func TestSignInMemoryBounded(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }

	l := newLimiter(clock, MaxSignInsPerAddress)
	for i := range 3 * maxLimiterKeys {
		l.add(fmt.Sprintf("198.51.%d.%d", i/256, i%256))
		require.LessOrEqual(t, l.keys(), maxLimiterKeys)
	}

	ss := newSessions(clock)
	admin := ss.open(RoleAdmin, "aaaaaaaa")
	for range 3 * MaxSessions {
		ss.open(RoleReadOnly, "bbbbbbbb")
		now = now.Add(time.Millisecond)
	}
	require.Equal(t, MaxSessions, ss.count(RoleReadOnly))
	require.Equal(t, 1, ss.count(RoleAdmin))
	require.Len(t, ss.m, MaxSessions+1)
	require.NotNil(t, ss.get(admin.id), "another role's sessions never evict the admin's")

	// Sessions that ended are dropped from the counts too.
	now = now.Add(SessionIdle + time.Second)
	ss.open(RoleReadOnly, "bbbbbbbb")
	require.Nil(t, ss.get(admin.id))
	ss.end(admin.id)
	require.Equal(t, 1, ss.count(RoleReadOnly))
	require.Zero(t, ss.count(RoleAdmin))
	require.Len(t, ss.m, 1)
}
