package kafkasub_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNothingOfTheOutbox: the consumer adapter is the guard's; it reads the header names
// from kafka/header, so a consumer's build holds neither the outbox nor the publisher module.
func TestImportsNothingOfTheOutbox(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the imports: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const repo = "github.com/cassdedup/cassdedup/"
	for _, p := range strings.Fields(string(out)) {
		if p == repo+"outbox" || strings.HasPrefix(p, repo+"outbox/") || p == repo+"kafka/kafkapub" {
			t.Errorf("kafkasub imports %s", p)
		}
	}
}
