package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// asProvider adapts a provider's constructor to answer a Provider.
func asProvider[P Provider](newP func([]string, Options) (P, error)) func([]string, Options) (Provider, error) {
	return func(secrets []string, o Options) (Provider, error) {
		p, err := newP(secrets, o)
		return p, err
	}
}

// TestNewVerifiers covers the constructors of the HMAC verifiers: the
// secrets they refuse, without printing them, and the name and
// tolerance (for those that sign a timestamp) of the verifiers they build.
func TestNewVerifiers(t *testing.T) {
	clerk, stripe, standard := asProvider(NewClerk), asProvider(NewStripe), asProvider(NewStandardWebhooks)
	github, shopify := asProvider(NewGitHub), asProvider(NewShopify)
	tests := []struct {
		name     string
		newP     func([]string, Options) (Provider, error)
		optName  string // Options.Name
		secrets  []string
		tol      time.Duration
		wantErr  string
		wantName string
		wantTol  time.Duration
	}{
		{"clerk: empty secret", clerk, "", []string{clerkSecret, ""}, 0, "clerk: secret 1 decodes to an empty key", "", 0},
		{"clerk: prefix only", clerk, "", []string{"whsec_"}, 0, "clerk: secret 0 decodes to an empty key", "", 0},
		{"clerk: not base64", clerk, "", []string{clerkSecret, clerkOldSecret, "whsec_not!base64"}, 0, "clerk: secret 2 is not whsec_ followed by standard base64", "", 0},
		{"clerk: url-safe base64", clerk, "", []string{"whsec_-_-_"}, 0, "clerk: secret 0 is not whsec_ followed by standard base64", "", 0},
		{"clerk: missing padding", clerk, "", []string{"whsec_YWJj" + "ZA"}, 0, "clerk: secret 0 is not whsec_ followed by standard base64", "", 0},
		{"clerk: stripe-like raw secret", clerk, "", []string{"whsec_test_secret"}, 0, "clerk: secret 0 is not whsec_ followed by standard base64", "", 0},
		{"clerk: without prefix", clerk, "", []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, time.Second, "", "clerk", time.Second},
		{"stripe: a secret that is not base64 is fine", stripe, "", []string{"whsec_test_secret!"}, 0, "", "stripe", 300 * time.Second},
		{"standard: default", standard, "resend", []string{standardSecret}, 0, "", "resend", 5 * time.Minute},
		{"standard: without prefix", standard, "acme", []string{strings.TrimPrefix(standardSecret, "whsec_")}, time.Second, "", "acme", time.Second},
		{"standard: empty key", standard, "resend", []string{"whsec_"}, 0, "resend: secret 0 decodes to an empty key", "", 0},
		{"standard: not base64", standard, "resend", []string{standardSecret, "whsec_test_secret"}, 0, "resend: secret 1 is not whsec_ followed by standard base64", "", 0},
		{"standard: bad name", standard, "Resend!", []string{standardSecret}, 0, `standard webhooks: invalid provider name "Resend!": want 1 to 32 of [a-z0-9_-], starting with a letter or digit`, "", 0},
		{"github: two", github, "", []string{githubSecret, githubOldSecret}, 0, "", "github", 0},
		{"shopify: none", shopify, "", nil, 0, "shopify: no secret configured", "", 0},
		{"shopify: empty", shopify, "", []string{""}, 0, "shopify: secret 0 is empty", "", 0},
		{"shopify: two", shopify, "", []string{shopifySecret, shopifyOldSecret}, 0, "", "shopify", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := tt.newP(tt.secrets, Options{Name: tt.optName, Tolerance: tt.tol})
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.Nil(t, p)
				for _, secret := range tt.secrets {
					if rest := strings.TrimPrefix(secret, "whsec_"); rest != "" {
						require.NotContains(t, err.Error(), rest, "the error must not print a secret")
					}
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.wantName, p.Name())
			if timed, ok := p.(interface{ Tolerance() time.Duration }); ok {
				require.Equal(t, tt.wantTol, timed.Tolerance())
			}
		})
	}
}
