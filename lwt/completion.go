package lwt

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// CellValue supplies the value of an extra cell of a completion. Its CellValue method is called
// once, after the function has returned successfully and before the completion is sent; an
// error stops the completion and releases the claim instead, as an error of the function would
// (an error marked with Permanent records the failure instead, and it is replayed).
type CellValue interface {
	CellValue() (any, error)
}

// Completion collects the extra cells that the completion of one claimed run writes beside
// the result: the columns of Table.CompletionColumns. They are sent in the same conditional
// update that sets the record COMPLETED, conditioned on the claim's owner and fence, so they are
// stored if and only if the result is. A run that fails, is released or loses its lease writes
// none of them, and every new claim of the key sets them to null with the record's other cells.
//
// The function passed to ExecuteOnce finds its Completion with CompletionFromContext. A
// Completion is safe for concurrent use by the function's goroutines.
type Completion struct {
	mu      sync.Mutex
	allowed map[string]bool
	cells   map[string]CellValue
	sealed  bool
	table   Table
}

type completionCtxKey struct{}

// CompletionFromContext returns the completion of the claimed run whose ctx this is. ok is false
// outside ExecuteOnce's function and on the fast path, where no conditional write completes the
// run.
func CompletionFromContext(ctx context.Context) (*Completion, bool) {
	c, ok := ctx.Value(completionCtxKey{}).(*Completion)
	return c, ok
}

// LoadOrStore returns the value already set for column, or sets v and returns it. column must be
// one of the table's CompletionColumns (else ErrInvalidArgument), and the run must not have
// returned yet (else ErrInvalidArgument: its completion is already on its way).
func (c *Completion) LoadOrStore(column string, v CellValue) (CellValue, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.allowed[column] {
		return nil, fmt.Errorf("%w: %q is not a completion column of the table", ErrInvalidArgument, column)
	}
	if c.sealed {
		return nil, fmt.Errorf("%w: the run has returned; its completion is sealed", ErrInvalidArgument)
	}
	if cur, ok := c.cells[column]; ok {
		return cur, nil
	}
	if v == nil {
		return nil, fmt.Errorf("%w: nil cell value", ErrInvalidArgument)
	}
	c.cells[column] = v
	return v, nil
}

// Table describes the table whose record the run completes, so a cell's writer can tell
// which record (and which key columns) its cells belong to.
func (c *Completion) Table() Table {
	t := c.table
	t.KeyColumns = append([]string(nil), t.KeyColumns...)
	t.CompletionColumns = append([]string(nil), t.CompletionColumns...)
	return t
}

// seal stops further cells and computes the values of those set, in column order.
func (c *Completion) seal() (cols []string, values []any, err error) {
	c.mu.Lock()
	c.sealed = true
	cells := c.cells
	c.mu.Unlock()
	for col := range cells {
		cols = append(cols, col)
	}
	sort.Strings(cols)
	for _, col := range cols {
		v, err := cells[col].CellValue()
		if err != nil {
			return nil, nil, fmt.Errorf("lwt: completion cell %s: %w", col, err)
		}
		values = append(values, v)
	}
	return cols, values, nil
}

// newCompletion returns the completion of one run over the store's completion columns.
func (s *Store) newCompletion() *Completion {
	return &Completion{allowed: s.completionCols, cells: map[string]CellValue{}, table: s.table}
}

// completionCells are the extra cells of one completion: quoted columns and their values.
type completionCells struct {
	cols   []string
	values []any
}

// finishWith is the finish statement with the extra cells set beside the result.
func (s *Store) finishWith(cells completionCells) string {
	if len(cells.cols) == 0 {
		return s.stmt.finish
	}
	set := ""
	for _, c := range cells.cols {
		set += ", " + s.completionQuoted[c] + " = ?"
	}
	return strings.Replace(s.stmt.finish, " WHERE ", set+" WHERE ", 1)
}
