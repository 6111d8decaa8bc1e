package readmecheck

import (
	"slices"
	"testing"
)

func TestSlug(t *testing.T) {
	cases := map[string]string{
		"What exactly-once costs: one run of `make bench`": "what-exactly-once-costs-one-run-of-make-bench",
		"When your function's own write fails ambiguously": "when-your-functions-own-write-fails-ambiguously",
		"Throughput of LWTs against INSERTs (P8)":          "throughput-of-lwts-against-inserts-p8",
		"Durability: what a crash can lose":                "durability-what-a-crash-can-lose",
	}
	for in, want := range cases {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAnchorsRepeatsAndFences(t *testing.T) {
	md := "# A\n## Notes\n```sh\n# not a heading\n```\n### Notes\n"
	got := anchors(md)
	for _, want := range []string{"a", "notes", "notes-1"} {
		if !got[want] {
			t.Errorf("anchors lack %q: %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a comment in a code block was taken for a heading")
	}
}

func TestBlocks(t *testing.T) {
	bs, err := blocks("text\n```go\npackage a\n```\n\n```sh\nmake test\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[0].lang != "go" || bs[0].line != 2 || bs[0].text != "package a\n" || bs[1].lang != "sh" {
		t.Errorf("blocks = %+v", bs)
	}
	if _, err := blocks("```go\npackage a\n"); err == nil {
		t.Error("an unclosed block was accepted")
	}
}

func TestLinks(t *testing.T) {
	md := "see [a](docs/a.md#x) and `[b](b.md)`\n```\n[c](c.md)\n```\n[d](https://e.org) [f](#g \"title\")\n"
	var got []string
	for _, l := range links(md) {
		got = append(got, l.target)
	}
	if want := []string{"docs/a.md#x", "https://e.org", "#g"}; !slices.Equal(got, want) {
		t.Errorf("links = %q, want %q", got, want)
	}
	for target, want := range map[string]bool{"docs/a.md": true, "#g": true, "../LICENSE": true, "https://e.org": false, "mailto:a@b": false, "//e.org/x": false} {
		if got := isRelative(target); got != want {
			t.Errorf("isRelative(%q) = %v", target, got)
		}
	}
}
