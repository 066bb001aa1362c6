package console

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The sign-in limiters hold bounded memory whatever the number of
// addresses and sign-ins (sessions are in Postgres, capped per role and
// operator: TestReadOnlySignInsLeaveAdminSignedIn).
func TestSignInMemoryBounded(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }

	l := newLimiter(clock, MaxSignInsPerAddress)
	for i := range 3 * maxLimiterKeys {
		l.add(fmt.Sprintf("198.51.%d.%d", i/256, i%256))
		require.LessOrEqual(t, l.keys(), maxLimiterKeys)
	}
}
