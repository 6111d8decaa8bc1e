package schema

import (
	"strings"
)

// tableModel is what the applied migrations say one table holds: the statement that creates
// it and its columns, in the order they were defined.
type tableModel struct {
	name      string
	migration string // the file whose statement created the table
	create    string // the CREATE TABLE ... IF NOT EXISTS statement, as retargeted
	columns   []column
}

type column struct {
	name, cqlType string
	key           bool // part of the primary key: it cannot be missing unless the table is
	createdBy     string
}

// expectedTables folds the statements of ms, in order, into the tables and columns they
// leave: CREATE TABLE adds a table, ALTER TABLE ... ADD and DROP add and remove columns,
// DROP TABLE removes one. Other statements (the keyspace, indexes, types) create nothing this
// check compares. It knows only the forms the files use, and it ignores what it cannot read
// rather than guess, so a drift it reports is always real.
func expectedTables(ms []Migration) []*tableModel {
	var order []*tableModel
	byName := map[string]*tableModel{}
	for _, m := range ms {
		for _, stmt := range m.Statements {
			words := strings.Fields(stmt)
			upper := strings.Fields(strings.ToUpper(stmt))
			switch {
			case hasWords(upper, "CREATE", "TABLE"):
				t := parseCreateTable(stmt, words, m.Name)
				if t != nil && byName[t.name] == nil {
					byName[t.name] = t
					order = append(order, t)
				}
			case hasWords(upper, "ALTER", "TABLE") && len(words) > 3:
				if t := byName[tableName(words[2])]; t != nil {
					alterTable(t, words[3:], upper[3:], m.Name)
				}
			case hasWords(upper, "DROP", "TABLE"):
				name := tableName(afterIfExists(words[2:], upper[2:]))
				if t := byName[name]; t != nil {
					delete(byName, name)
					order = removeTable(order, t)
				}
			}
		}
	}
	return order
}

func hasWords(upper []string, want ...string) bool {
	if len(upper) < len(want) {
		return false
	}
	for i, w := range want {
		if upper[i] != w {
			return false
		}
	}
	return true
}

// afterIfExists skips "IF EXISTS" or "IF NOT EXISTS" and returns the next word.
func afterIfExists(words, upper []string) string {
	i := 0
	if i < len(upper) && upper[i] == "IF" {
		i++
		if i < len(upper) && upper[i] == "NOT" {
			i++
		}
		i++ // EXISTS
	}
	if i < len(words) {
		return words[i]
	}
	return ""
}

// tableName reads the table of a name such as "ks".t, ks."t" or t(...): lower case, as
// system_schema lists unquoted names.
func tableName(word string) string {
	word, _, _ = strings.Cut(word, "(")
	if i := strings.LastIndex(word, "."); i >= 0 {
		word = word[i+1:]
	}
	return strings.ToLower(strings.Trim(word, `"`))
}

func parseCreateTable(stmt string, words []string, migration string) *tableModel {
	upper := strings.Fields(strings.ToUpper(stmt))
	name := tableName(afterIfExists(words[2:], upper[2:]))
	open := strings.Index(stmt, "(")
	if name == "" || open < 0 {
		return nil
	}
	body, ok := balanced(stmt[open:])
	if !ok {
		return nil
	}
	t := &tableModel{name: name, migration: migration, create: stmt}
	var keys []string
	for _, def := range splitTopLevel(body) {
		f := strings.Fields(def)
		if len(f) == 0 {
			continue
		}
		if strings.EqualFold(f[0], "PRIMARY") {
			open := strings.Index(def, "(")
			if open < 0 {
				continue
			}
			inner, _ := balanced(def[open:])
			keys = append(keys, strings.FieldsFunc(inner, func(r rune) bool { return r == ',' || r == '(' || r == ')' || r == ' ' || r == '\n' })...)
			continue
		}
		if len(f) < 2 {
			continue
		}
		typ := strings.Join(f[1:], " ")
		isKey := false
		if up := strings.ToUpper(typ); strings.HasSuffix(up, " PRIMARY KEY") {
			typ, isKey = strings.TrimSpace(typ[:len(typ)-len(" PRIMARY KEY")]), true
		}
		t.columns = append(t.columns, column{name: strings.ToLower(strings.Trim(f[0], `"`)), cqlType: typ, key: isKey, createdBy: migration})
	}
	for _, k := range keys {
		for i := range t.columns {
			if t.columns[i].name == strings.ToLower(strings.Trim(k, `"`)) {
				t.columns[i].key = true
			}
		}
	}
	return t
}

// alterTable applies ADD and DROP to t; words and upper follow "ALTER TABLE name".
func alterTable(t *tableModel, words, upper []string, migration string) {
	switch upper[0] {
	case "ADD":
		for _, d := range addedColumns(words, upper) {
			f := strings.Fields(d)
			name := strings.ToLower(strings.Trim(f[0], `"`))
			if t.column(name) == nil {
				t.columns = append(t.columns, column{name: name, cqlType: strings.Join(f[1:], " "), createdBy: migration})
			}
		}
	case "DROP":
		rest := words[1:]
		if len(upper) > 2 && upper[1] == "IF" && upper[2] == "EXISTS" {
			rest = words[3:]
		}
		for _, w := range strings.FieldsFunc(strings.Join(rest, " "), func(r rune) bool { return r == ',' || r == '(' || r == ')' || r == ' ' }) {
			name := strings.ToLower(strings.Trim(w, `"`))
			for i, c := range t.columns {
				if c.name == name {
					t.columns = append(t.columns[:i], t.columns[i+1:]...)
					break
				}
			}
		}
	}
}

// addedColumns returns the column definitions ("name type") of an ALTER TABLE ... ADD, whose
// words and upper follow the table's name: ADD [IF NOT EXISTS] name type, or a list of them in
// parentheses. It returns none for a list it cannot read.
func addedColumns(words, upper []string) []string {
	rest := words[1:]
	if len(upper) > 3 && upper[1] == "IF" && upper[2] == "NOT" && upper[3] == "EXISTS" {
		rest = words[4:]
	}
	text := strings.Join(rest, " ")
	defs := []string{text}
	if strings.HasPrefix(text, "(") {
		inner, ok := balanced(text)
		if !ok {
			return nil
		}
		defs = splitTopLevel(inner)
	}
	var out []string
	for _, d := range defs {
		if len(strings.Fields(d)) >= 2 {
			out = append(out, d)
		}
	}
	return out
}

func (t *tableModel) column(name string) *column {
	for i := range t.columns {
		if t.columns[i].name == name {
			return &t.columns[i]
		}
	}
	return nil
}

func removeTable(order []*tableModel, t *tableModel) []*tableModel {
	for i, o := range order {
		if o == t {
			return append(order[:i], order[i+1:]...)
		}
	}
	return order
}

// balanced returns what lies inside the parenthesis that opens s, and whether it closes.
func balanced(s string) (string, bool) {
	depth := 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return s[1:i], true
			}
		}
	}
	return "", false
}

// splitTopLevel splits at commas outside parentheses and angle brackets (map<text, int>).
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(', '<':
			depth++
		case ')', '>':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}
