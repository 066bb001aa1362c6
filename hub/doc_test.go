package hub_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// module is the module path every package of the map is relative to.
const module = "github.com/hookhub/hookhub"

// root is the module's root directory, seen from this package's.
const root = ".."

// mapEntry is one line of the package map in doc.go: "  - path: what it
// provides".
var mapEntry = regexp.MustCompile(`^//\s+- ([a-z0-9_/]+|\.): `)

// packageMap returns the packages doc.go's package map lists, relative to
// the module root ("." for the module root itself).
func packageMap(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	var listed []string
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		if m := mapEntry.FindStringSubmatch(sc.Text()); m != nil {
			listed = append(listed, m[1])
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, listed, "doc.go has no package map")
	return listed
}

// The package map in doc.go names every package `go list ./...` finds, and
// nothing else.
func TestPackageMapIsComplete(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	require.NoError(t, err, "the go command lists the module's packages")
	cmd := exec.Command(goCmd, "list", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list ./...")
	var packages []string
	for _, line := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(line, module), "/")
		if rel == "" {
			rel = "."
		}
		packages = append(packages, rel)
	}
	listed := packageMap(t)
	for _, p := range packages {
		require.Contains(t, listed, p, "hub/doc.go's package map does not list %s: add a line for it", p)
	}
	for _, p := range listed {
		require.Contains(t, packages, p, "hub/doc.go's package map lists %s, which is not a package of the module: remove its line", p)
	}
}

// The documents: the front page, docs/ and the other READMEs.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	return append([]string{
		filepath.Join(root, "README.md"),
		filepath.Join(root, "subscribers", "README.md"),
		filepath.Join(root, "deploy", "README.md"),
	}, docs...)
}

var (
	// fence is a fenced code block, whose text is not markdown.
	fence = regexp.MustCompile("(?ms)^```.*?^```")
	// codeSpan is an inline code span.
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// link is an inline link or image: [text](target) or ![alt](target).
	link = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// heading is an ATX heading.
	heading = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
)

// prose returns a markdown text without its code blocks and code spans.
func prose(text string) string {
	return codeSpan.ReplaceAllString(fence.ReplaceAllString(text, ""), "")
}

// anchors returns the anchors GitHub gives a document's headings: lower
// case, punctuation dropped, spaces as hyphens, "-1", "-2"... for repeats.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+string(rune('0'+n))] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// Every relative link of the documents names a file of the repository, and
// every #anchor a heading of the document it points into.
func TestDocumentLinksResolve(t *testing.T) {
	t.Parallel()
	anchorsOf := map[string]map[string]bool{} // by path: each document's read once
	for _, doc := range documents(t) {
		src, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(prose(string(src)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
				_, err := os.Stat(path)
				require.NoError(t, err, "%s links to %s, which does not exist", doc, target)
			}
			if anchor == "" {
				continue
			}
			require.True(t, strings.HasSuffix(path, ".md"), "%s links to an anchor of %s, not a markdown document", doc, target)
			if anchorsOf[path] == nil {
				text, err := os.ReadFile(path)
				require.NoError(t, err)
				anchorsOf[path] = anchors(string(text))
			}
			require.True(t, anchorsOf[path][anchor], "%s links to %s: %s has no heading with anchor #%s", doc, target, path, anchor)
		}
	}
}

// walkSources calls fn with the path and text of each file of the
// repository whose extension is in exts, leaving out hidden directories,
// test data and node_modules.
func walkSources(t *testing.T, exts map[string]bool, fn func(path string, src []byte)) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !exts[filepath.Ext(path)] {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(path, src)
		return nil
	})
	require.NoError(t, err)
}

var (
	// docReference is a document named in a comment or a string of Go code.
	docReference = regexp.MustCompile(`\b(?:docs/[A-Za-z0-9_.-]+\.md|[a-z/]*README\.md)`)
	// invariantReference is a comment's citation of a design invariant.
	invariantReference = regexp.MustCompile(`DESIGN invariants? (\d+)`)
	// invariant is the first line of an invariant in docs/DESIGN.md.
	invariant = regexp.MustCompile(`(?m)^(\d+)\. \*\*`)
)

// Every document the Go code names is in the repository, and every design
// invariant it cites ("DESIGN invariant 8") is in docs/DESIGN.md under that
// number.
func TestCodeCitesExistingDocuments(t *testing.T) {
	t.Parallel()
	design, err := os.ReadFile(filepath.Join(root, "docs", "DESIGN.md"))
	require.NoError(t, err)
	invariants := map[string]bool{}
	for _, m := range invariant.FindAllStringSubmatch(string(design), -1) {
		invariants[m[1]] = true
	}
	require.NotEmpty(t, invariants, "docs/DESIGN.md lists no invariants")
	walkSources(t, map[string]bool{".go": true}, func(path string, src []byte) {
		// The regular expressions run only on the files holding their
		// literal parts: most hold neither.
		if bytes.Contains(src, []byte("docs/")) || bytes.Contains(src, []byte("README.md")) {
			for _, ref := range docReference.FindAll(src, -1) {
				_, err := os.Stat(filepath.Join(root, string(ref)))
				require.NoError(t, err, "%s cites %s, which is not in the repository", path, ref)
			}
		}
		if bytes.Contains(src, []byte("DESIGN invariant")) {
			for _, m := range invariantReference.FindAllSubmatch(src, -1) {
				require.True(t, invariants[string(m[1])], "%s cites DESIGN invariant %s, which docs/DESIGN.md does not list", path, m[1])
			}
		}
	})
}

// issueNumber is a citation of a tracker's issue by its number: the word
// issue (or issues), a space or hyphen, an optional # and digits.
var issueNumber = regexp.MustCompile(`(?i)\bissues?[ -]#?\d+`)

// The code, the migrations and the documents (the CHANGELOG too) describe
// behaviour, never cite an internal issue number, which tells a reader
// outside the tracker nothing. Test data (providers' payloads) is left out.
func TestNoIssueNumbers(t *testing.T) {
	text := map[string]bool{".go": true, ".md": true, ".sql": true, ".yml": true, ".yaml": true, ".sh": true,
		".mjs": true, ".js": true, ".html": true, ".tmpl": true, ".css": true, ".txt": true}
	t.Parallel()
	walkSources(t, text, func(path string, src []byte) {
		// A citation never spans lines: the whole text is searched at
		// once, and each match is reported with its line.
		for _, m := range issueNumber.FindAllIndex(src, -1) {
			line := bytes.Count(src[:m[0]], []byte("\n")) + 1
			t.Errorf("%s:%d cites %q: describe the behaviour instead", path, line, src[m[0]:m[1]])
		}
	})
}

// The operator surface reads destinations through deststate, never
// through the destination runtime (its HTTP client, runner and metrics).
func TestOperatorSurfaceSkipsDestinationRuntime(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./hub/ops", "./hub/console")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err, "go list -deps")
	require.NotContains(t, strings.Fields(string(out)), module+"/subscribers/destination",
		"hub/ops or hub/console imports the destination runtime: read its tables through subscribers/destination/deststate")
}
