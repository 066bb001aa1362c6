package backfill

// Placeholder until branch i14-github is merged: its github.go declares
// GitHubConfig, GitHub and NewGitHub for real, and this file is deleted at
// that merge.

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// GitHubConfig configures the GitHub source.
type GitHubConfig struct {
	BaseURL string
	Token   string
	Hook    string
	Client  *http.Client
}

// GitHub is the GitHub source (placeholder).
type GitHub struct{}

// NewGitHub returns the GitHub source (placeholder: always an error).
func NewGitHub(GitHubConfig) (*GitHub, error) { return nil, errors.New("github backfill not built") }

// Provider returns "github".
func (*GitHub) Provider() string { return "github" }

// List fails: the placeholder lists nothing.
func (*GitHub) List(context.Context, time.Time, time.Time, string) (Page, error) {
	return Page{}, errors.New("github backfill not built")
}
