package storetest

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Statement is one SQL statement that a store ran, with its arguments.
type Statement struct {
	SQL  string
	Args []any
}

// Recorder collects the statements a store runs while Record runs a
// function. Give Hook to store.Config.OnStatement.
type Recorder struct {
	mu    sync.Mutex
	on    bool
	stmts []Statement
}

// Hook is the store.Config.OnStatement that feeds r.
func (r *Recorder) Hook(sql string, args []any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.stmts = append(r.stmts, Statement{SQL: sql, Args: slices.Clone(args)})
	}
}

// Record returns the statements run while fn ran, in order. The arguments
// are the values the store passed; the slices are copied, not what they
// point to.
func (r *Recorder) Record(fn func()) []Statement {
	r.mu.Lock()
	r.on, r.stmts = true, nil
	r.mu.Unlock()
	fn()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	return r.stmts
}

// Substitution changes the arguments of a replay: every string argument
// equal to Marker becomes Fresh, and every int64 argument equal to ID
// becomes the first value returned by the first statement that took Fresh
// (the id of a row that statement created). It lets a replay create new
// rows, as the recorded call did, instead of finding the recorded ones.
type Substitution struct {
	Marker, Fresh string
	ID            int64
}

// Replay runs stmts in order on one connection of pool, reading every row,
// as a driver with prepared statements runs them: the pool's default
// statement cache prepares each statement once per connection. Statements
// without arguments go through the simple protocol, as pgx sends them.
func Replay(ctx context.Context, pool *pgxpool.Pool, stmts []Statement, sub *Substitution) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var newID *int64
	for _, s := range stmts {
		if len(s.Args) == 0 {
			if _, err := conn.Exec(ctx, s.SQL); err != nil {
				return fmt.Errorf("replay %q: %w", s.SQL, err)
			}
			continue
		}
		args, took := s.Args, false
		if sub != nil {
			args = slices.Clone(args)
			for i, a := range args {
				switch v := a.(type) {
				case string:
					if v == sub.Marker {
						args[i], took = sub.Fresh, true
					}
				case int64:
					if v == sub.ID && newID != nil {
						args[i] = *newID
					}
				}
			}
		}
		rows, err := conn.Query(ctx, s.SQL, args...)
		if err != nil {
			return fmt.Errorf("replay %q: %w", s.SQL, err)
		}
		for rows.Next() {
			if took && newID == nil {
				var id int64
				if err := rows.Scan(&id); err == nil {
					newID = &id
				}
			}
			_ = rows.RawValues()
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("replay %q: %w", s.SQL, err)
		}
	}
	return nil
}

var placeholder = regexp.MustCompile(`\$([0-9]+)`)

// PgbenchScript renders stmts as a pgbench script that runs them once, for
// `pgbench -M prepared`. Arguments become pgbench variables named s<i>a<n>
// (statement i, placeholder n), defined by the returned -D options; nil
// arguments become NULL. Values are written as PostgreSQL's text input,
// which the server reads with the types it infers for the placeholders, as
// it does for pgx. pgbench cannot define an empty variable with -D, so the
// script sets those with \gset in each client's first transaction.
func PgbenchScript(stmts []Statement) (script string, defs []string, err error) {
	var b strings.Builder
	var empty []string
	seen := map[string]bool{}
	for i, s := range stmts {
		sql := s.SQL
		var bad error
		sql = placeholder.ReplaceAllStringFunc(sql, func(p string) string {
			n, _ := strconv.Atoi(p[1:])
			if n < 1 || n > len(s.Args) {
				bad = fmt.Errorf("statement %d: %s has no argument", i, p)
				return p
			}
			text, null, err := pgText(s.Args[n-1])
			if err != nil {
				bad = fmt.Errorf("statement %d, argument %d: %w", i, n, err)
				return p
			}
			if null {
				return "NULL"
			}
			name := fmt.Sprintf("s%da%d", i, n)
			switch {
			case seen[name]:
			case text == "":
				empty = append(empty, "'' AS "+name)
			default:
				defs = append(defs, name+"="+text)
			}
			seen[name] = true
			return ":" + name
		})
		if bad != nil {
			return "", nil, bad
		}
		b.WriteString(strings.TrimSpace(sql))
		b.WriteString(";\n")
	}
	script = b.String()
	if len(empty) > 0 {
		script = "\\if :empty_set\n\\else\nSELECT " + strings.Join(empty, ", ") + " \\gset\n\\set empty_set 1\n\\endif\n" + script
		defs = append(defs, "empty_set=0")
	}
	return script, defs, nil
}

// pgText writes v as PostgreSQL's text input for it.
func pgText(v any) (text string, null bool, err error) {
	switch x := v.(type) {
	case nil:
		return "", true, nil
	case string:
		return x, false, nil
	case *string:
		if x == nil {
			return "", true, nil
		}
		return *x, false, nil
	case int64:
		return strconv.FormatInt(x, 10), false, nil
	case int:
		return strconv.Itoa(x), false, nil
	case int32:
		return strconv.FormatInt(int64(x), 10), false, nil
	case bool:
		return strconv.FormatBool(x), false, nil
	case json.RawMessage:
		return string(x), false, nil
	case []byte:
		return `\x` + hex.EncodeToString(x), false, nil
	case time.Time:
		return x.Format("2006-01-02 15:04:05.999999Z07:00"), false, nil
	case *time.Time:
		if x == nil {
			return "", true, nil
		}
		return x.Format("2006-01-02 15:04:05.999999Z07:00"), false, nil
	case []int64:
		s := make([]string, len(x))
		for i, n := range x {
			s[i] = strconv.FormatInt(n, 10)
		}
		return "{" + strings.Join(s, ",") + "}", false, nil
	case []string:
		s := make([]string, len(x))
		for i, e := range x {
			s[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(e) + `"`
		}
		return "{" + strings.Join(s, ",") + "}", false, nil
	}
	return "", false, fmt.Errorf("no text form for %T", v)
}

// Pool opens a pgx pool on url with pgx's defaults (the statement cache
// among them), closed when tb ends: the driver of a floor.
func Pool(tb testing.TB, url string) *pgxpool.Pool {
	tb.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		tb.Fatalf("pool: %v", err)
	}
	tb.Cleanup(pool.Close)
	return pool
}
