package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
)

// Migrate brings db's schema up to date with the goose SQL files in the
// folder "migrations" of fsys, each engine's own. opts add to the
// provider's options, such as a lock that makes concurrent migrators take
// turns.
func Migrate(ctx context.Context, db *sql.DB, dialect goose.Dialect, fsys fs.FS, opts ...goose.ProviderOption) error {
	sub, err := fs.Sub(fsys, "migrations")
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	opts = append([]goose.ProviderOption{goose.WithDisableGlobalRegistry(true), goose.WithLogger(goose.NopLogger())}, opts...)
	p, err := goose.NewProvider(dialect, db, sub, opts...)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	_, err = p.Up(ctx)
	return err
}
