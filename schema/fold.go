package schema

import (
	"strings"
)

// folded returns the statements of ms, in order, with every ALTER TABLE ... ADD of a table that
// ms create folded into that table's CREATE TABLE: the statements that bring a keyspace without
// tables to the schema ms leave, in one schema change per table instead of one per table and
// per column added since. Each schema change costs the cluster a round of agreement, so a
// fresh install (and every test keyspace) takes half the changes.
//
// Only what gives the same schema folds. A column the CREATE already defines is not added
// twice (ADD IF NOT EXISTS would skip it too). Once a statement other than ADD or WITH alters a
// table, or drops it, nothing later folds into its CREATE: a column dropped and added again
// must be added after the drop. Everything else runs as written.
func folded(ms []Migration) []string {
	var out []string
	foldInto := map[string]int{} // table → index in out of its CREATE; -1 once sealed
	for _, stmt := range flatten(ms) {
		words := strings.Fields(stmt)
		upper := strings.Fields(strings.ToUpper(stmt))
		switch {
		case hasWords(upper, "CREATE", "TABLE"):
			name := tableName(afterIfExists(words[2:], upper[2:]))
			if _, seen := foldInto[name]; !seen {
				foldInto[name] = len(out)
			}
		case hasWords(upper, "ALTER", "TABLE") && len(words) > 3:
			name := tableName(words[2])
			i, ok := foldInto[name]
			if ok && i >= 0 && upper[3] == "ADD" {
				if create, ok := withColumns(out[i], addedColumns(words[3:], upper[3:])); ok {
					out[i] = create
					continue
				}
			}
			if ok && upper[3] != "ADD" && upper[3] != "WITH" {
				foldInto[name] = -1
			}
		case hasWords(upper, "DROP", "TABLE"):
			foldInto[tableName(afterIfExists(words[2:], upper[2:]))] = -1
		}
		out = append(out, stmt)
	}
	return out
}

// withColumns returns create with the column definitions defs added to its column list, less
// those whose column it defines already, and whether it could read create's columns.
func withColumns(create string, defs []string) (string, bool) {
	words := strings.Fields(create)
	t := parseCreateTable(create, words, "")
	open := strings.Index(create, "(")
	if t == nil || open < 0 || len(defs) == 0 {
		return create, false
	}
	var add []string
	for _, d := range defs {
		name := strings.ToLower(strings.Trim(strings.Fields(d)[0], `"`))
		if t.column(name) == nil {
			add = append(add, d)
			t.columns = append(t.columns, column{name: name})
		}
	}
	if len(add) == 0 {
		return create, true
	}
	return create[:open+1] + "\n    " + strings.Join(add, ",\n    ") + "," + create[open+1:], true
}
