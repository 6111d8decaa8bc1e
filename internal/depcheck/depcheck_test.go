package depcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestImported: a package's own imports and theirs are found under their roots, a root below
// which nothing is imported finds nothing, and a root is not a prefix of a sibling's name.
func TestImported(t *testing.T) {
	assert.Equal(t, []string{"os/exec"}, Imported(t, []string{"."}, "os/exec"))
	assert.Contains(t, Imported(t, []string{"."}, "internal"), "internal/bytealg")
	assert.Empty(t, Imported(t, []string{"."}, "net/http"))
	assert.Empty(t, Imported(t, []string{"."}, "o"), "o is not a root of os")
}

// TestImports: a package's own imports are listed, its tests' too, and not its dependencies'.
func TestImports(t *testing.T) {
	got := Imports(t, "", ".")
	own := got["github.com/cassdedup/cassdedup/internal/depcheck"]
	assert.Contains(t, own, "os/exec")
	assert.Contains(t, own, "github.com/stretchr/testify/assert", "a test's import")
	assert.NotContains(t, own, "internal/bytealg", "a dependency's import")
}
