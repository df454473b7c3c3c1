package llmtool

import (
	"context"
	"database/sql"
	"time"

	"github.com/llmtool/llmtool/internal/engine"
	"github.com/llmtool/llmtool/internal/migrate"
)

// openEngine declares or detects db's engine and migrates llmtool's tables.
func openEngine(db *sql.DB, opts *Options) (engine.Engine, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		e   engine.Engine
		err error
	)
	if opts != nil && opts.Engine != "" {
		e, err = engine.Parse(opts.Engine)
	} else {
		e, err = engine.Detect(ctx, db)
	}
	if err != nil {
		return 0, err
	}
	return e, migrate.Apply(ctx, db, e, scopeTable, scopeMigrations)
}
