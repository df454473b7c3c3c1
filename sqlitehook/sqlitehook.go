// Package sqlitehook lets a registry on modernc.org/sqlite stop a read
// call's running statement with one cancellation hook per call, rather
// than the driver's watcher goroutine per statement.
//
// Pass Interrupt as the registry's Options.Interrupt:
//
//	reg, err := llmtool.NewRegistry(db, &llmtool.Options{Interrupt: sqlitehook.Interrupt}, modules...)
//
// The package is separate because modernc.org/sqlite exports no interrupt:
// Interrupt calls sqlite3_interrupt from modernc.org/sqlite/lib, about
// 6.8 MB of code, which a host that uses modernc.org/sqlite links anyway
// (the driver is built on it) and which the llmtool package itself does
// not import, so that PostgreSQL hosts do not carry it.
package sqlitehook

import (
	"reflect"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Interrupt returns a function that stops the statement running on
// driverConn, the driver's connection as (*sql.Conn).Raw passes it, by
// calling sqlite3_interrupt; it may be called from any goroutine while
// the connection is open. It returns nil when driverConn is not a
// modernc.org/sqlite connection, or when that driver's internals are not
// the ones it knows (the unexported conn struct with its sqlite3 handle in
// a uintptr field db, as in modernc.org/sqlite v1.62); the registry then
// leaves the cancellation of each statement to the driver, as without the
// hook.
//
// Its type is that of llmtool.Options.Interrupt.
func Interrupt(driverConn any) (interrupt func()) {
	db := handle(driverConn, "modernc.org/sqlite")
	if db == 0 {
		return nil
	}
	return func() {
		tls := libc.NewTLS()
		sqlite3.Xsqlite3_interrupt(tls, db)
		tls.Close()
	}
}

// handle reads the sqlite3 handle of a connection of the driver in
// package pkg (a *conn with a uintptr field db), or returns 0.
func handle(driverConn any, pkg string) uintptr {
	v := reflect.ValueOf(driverConn)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0
	}
	t := v.Type().Elem()
	if t.Kind() != reflect.Struct || t.PkgPath() != pkg || t.Name() != "conn" {
		return 0
	}
	f := v.Elem().FieldByName("db")
	if !f.IsValid() || f.Kind() != reflect.Uintptr {
		return 0
	}
	return uintptr(f.Uint())
}
