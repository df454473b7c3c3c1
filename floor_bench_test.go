package llmtool_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The physical floor of a one-row read: what no library on database/sql
// and this driver can go below. A driver statement prepared once on a
// connection reserved for it, run with the driver's own values, the row
// read into driver values, and the output appended by hand; the arguments
// parsed by hand (floor) or by encoding/json (floor-json). No snapshot:
// one statement in autocommit sees one.
//
//	go test -run '^$' -bench 'FloorRatio' -benchtime 2s -count 6 .

type floorReader struct {
	conn *sql.Conn
	st   driver.StmtQueryContext
	nv   []driver.NamedValue
	vals []driver.Value
	buf  []byte
	json bool // parse the arguments with encoding/json
}

func newFloorReader(b *testing.B, db *sql.DB, useJSON bool) *floorReader {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	require.NoError(b, err)
	f := &floorReader{conn: conn, nv: make([]driver.NamedValue, 1), vals: make([]driver.Value, 3), json: useJSON}
	require.NoError(b, conn.Raw(func(dc any) error {
		st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, `SELECT id, name, qty FROM items WHERE id = ?`)
		if err != nil {
			return err
		}
		f.st = st.(driver.StmtQueryContext)
		return nil
	}))
	b.Cleanup(func() {
		_ = conn.Raw(func(any) error { return f.st.(driver.Stmt).Close() })
		conn.Close()
	})
	return f
}

// floorID parses {"id": N} by hand.
func floorID(args []byte) int64 {
	var id int64
	for i := 0; i < len(args); i++ {
		if c := args[i]; c >= '0' && c <= '9' {
			id = id*10 + int64(c-'0')
		} else if id > 0 {
			break
		}
	}
	return id
}

func (f *floorReader) read(b *testing.B, ctx context.Context) {
	var id int64
	if f.json {
		var in GetItemIn
		if err := json.Unmarshal(readArgs, &in); err != nil {
			b.Fatal(err)
		}
		id = int64(in.ID)
	} else {
		id = floorID(readArgs)
	}
	f.nv[0] = driver.NamedValue{Ordinal: 1, Value: id}
	err := f.conn.Raw(func(any) error {
		rows, err := f.st.QueryContext(ctx, f.nv)
		if err != nil {
			return err
		}
		if err := rows.Next(f.vals); err != nil {
			rows.Close()
			return err
		}
		return rows.Close()
	})
	if err != nil {
		b.Fatal(err)
	}
	buf := append(f.buf[:0], `{"id":`...)
	buf = strconv.AppendInt(buf, f.vals[0].(int64), 10)
	buf = append(buf, `,"name":`...)
	buf = strconv.AppendQuote(buf, f.vals[1].(string))
	buf = append(buf, `,"qty":`...)
	buf = strconv.AppendInt(buf, f.vals[2].(int64), 10)
	f.buf = append(buf, '}')
}

// BenchmarkFloorRatio runs a one-row read through Invoke and at the
// physical floor, one call each per round in a seeded shuffled order, and
// reports Invoke's median call over each floor's (-p50, with the spread).
func BenchmarkFloorRatio(b *testing.B) {
	db := benchDB(b)
	reg := benchRegistry(b, db)
	ctx := context.Background()
	floor, floorJSON := newFloorReader(b, db, false), newFloorReader(b, db, true)
	floor.read(b, ctx)
	require.JSONEq(b, `{"id":1,"name":"apple","qty":3}`, string(floor.buf))
	res := invoke(reg, "get_item", string(readArgs))
	require.False(b, res.IsError, res.Text())
	require.JSONEq(b, string(floor.buf), string(res.JSON), "the floor gives Invoke's answer")
	paths := []benchPath{
		{"floor", func() { floor.read(b, ctx) }},
		{"floor-json", func() { floorJSON.read(b, ctx) }},
		{"llmtool=Invoke", invokePath(b, ctx, reg, "get_item", readArgs)},
	}
	t := shuffled(b, paths)
	t.report(b, 2, 0, "invoke/floor")
	t.report(b, 2, 1, "invoke/floor-json")
	t.reportSpread(b, []string{"floor", "floor-json", "invoke"}, "ns", 1)
}
