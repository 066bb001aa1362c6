package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookhub/hookhub/hub"
)

// The group commit's statement carries every body of its batch, tens of
// kilobytes to megabytes. Through pgx (Query), each one would be encoded
// into a parameter buffer and then copied into the connection's write
// buffer, both of which pgx shrinks back after every statement and grows
// again for the next, a little at a time: ~12 KB allocated per 2 KB
// delivery, ~60 % of all the hub allocated. execWire instead writes
// the statement's protocol messages (Bind, Execute, Sync) into a buffer
// it reuses, with pgx's own encoders (the connection's pgtype.Map), sends
// them in one write and reads the answer message by message, on a
// connection acquired from the pool and a statement pgx prepared and
// keeps (Conn.Prepare). The statement is a named prepared statement
// whatever default_query_exec_mode the database URL sets, as pgx's
// default mode would make it.

// maxKeptWireBuf is the largest statement buffer kept for the next
// statement, and keptWireBufs how many are kept (one per statement under
// way: the committers, a heavy delivery's commit, a backfill): a batch of
// heavy bodies does not leave its megabytes behind.
const (
	maxKeptWireBuf = 1 << 20
	keptWireBufs   = 4
)

// maxWireNotices bounds the messages other than rows (notices, parameter
// statuses) one statement's answer may have.
const maxWireNotices = 64

// wireBufs keeps statement buffers for the next statements. Unlike a
// sync.Pool's, they outlive garbage collections: a buffer is grown once,
// not after every other collection.
type wireBufs chan *[]byte

func (w wireBufs) get() *[]byte {
	select {
	case b := <-w:
		return b
	default:
		b := make([]byte, 0, 64<<10)
		return &b
	}
}

func (w wireBufs) put(b *[]byte) {
	if cap(*b) > maxKeptWireBuf {
		return
	}
	*b = (*b)[:0]
	select {
	case w <- b:
	default:
	}
}

// execWire runs sql, prepared once per connection, with args (one per
// parameter, anything pgx encodes) and calls row with each result row's
// values in binary format (nil: NULL), valid only during the call; at most
// maxRows rows. A server's error is a *pgconn.PgError, as from pgx, and
// leaves the connection usable; any other failure closes it (the pool
// then drops it), since what the server did is unknown.
func (s *Store) execWire(ctx context.Context, sql string, args []any, maxRows int, row func([][]byte) error) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	b := s.wire.get()
	defer s.wire.put(b)
	for attempt := 0; ; attempt++ {
		err := execOn(ctx, c.Conn(), b, sql, args, maxRows, row)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || (pgErr.Code != "26000" && pgErr.Code != "0A000") {
			return err
		}
		// The prepared statement is gone (DEALLOCATE, DISCARD) or its
		// plan no longer fits (a migration changed a type): the server
		// refused the Bind before running anything. Prepare it afresh,
		// and try once more.
		if dErr := c.Conn().Deallocate(ctx, sql); dErr != nil || attempt > 0 {
			return errors.Join(err, dErr)
		}
	}
}

// execOn is execWire on conn, with the statement buffer b.
func execOn(ctx context.Context, conn *pgx.Conn, b *[]byte, sql string, args []any, maxRows int, row func([][]byte) error) error {
	sd, err := conn.Prepare(ctx, sql, sql)
	if err != nil {
		return err
	}
	if *b, err = appendBind((*b)[:0], conn.TypeMap(), sd, args); err != nil {
		return err
	}
	pc := conn.PgConn()
	if err := sendWire(ctx, pc, *b); err != nil {
		abandon(pc)
		return err
	}
	err = readWire(ctx, pc, maxRows, row)
	var pgErr *pgconn.PgError
	if err != nil && !errors.As(err, &pgErr) {
		abandon(pc)
	}
	return err
}

// abandon closes pc, whose state is unknown after a failure, within a
// second whatever the caller's context: the pool then drops it.
func abandon(pc *pgconn.PgConn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = pc.Close(ctx)
}

// appendBind appends to b a Bind of the prepared statement sd with args,
// encoded as pgx would encode them, asking for every result column in
// binary, then Execute and Sync.
func appendBind(b []byte, m *pgtype.Map, sd *pgconn.StatementDescription, args []any) ([]byte, error) {
	if len(args) != len(sd.ParamOIDs) {
		return b, fmt.Errorf("bind: %d arguments for %d parameters", len(args), len(sd.ParamOIDs))
	}
	start := len(b)
	b = append(b, 'B', 0, 0, 0, 0, 0) // length, unnamed portal
	b = append(append(b, sd.Name...), 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(args)))
	for _, oid := range sd.ParamOIDs {
		b = binary.BigEndian.AppendUint16(b, uint16(m.FormatCodeForOID(oid)))
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(args)))
	for i, a := range args {
		at := len(b)
		b = append(b, 0, 0, 0, 0)
		v, err := m.Encode(sd.ParamOIDs[i], m.FormatCodeForOID(sd.ParamOIDs[i]), a, b)
		switch {
		case err != nil:
			return b[:start], fmt.Errorf("bind: encode parameter $%d: %w", i+1, err)
		case v == nil: // NULL
			binary.BigEndian.PutUint32(b[at:], math.MaxUint32)
		case len(v)-at-4 > math.MaxInt32:
			return b[:start], fmt.Errorf("bind: parameter $%d is too large", i+1)
		default:
			b = v
			binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
		}
	}
	b = binary.BigEndian.AppendUint16(b, 1)
	b = binary.BigEndian.AppendUint16(b, pgtype.BinaryFormatCode)
	if len(b)-start-1 > 0x3fffffff-1 {
		return b[:start], errors.New("bind: statement too large")
	}
	binary.BigEndian.PutUint32(b[start+1:], uint32(len(b)-start-1))
	b, _ = (&pgproto3.Execute{}).Encode(b)
	b, _ = (&pgproto3.Sync{}).Encode(b)
	return b, nil
}

// sendWire writes msgs to the server in one write, which ctx's end
// interrupts.
func sendWire(ctx context.Context, pc *pgconn.PgConn, msgs []byte) error {
	nc := pc.Conn()
	interrupted := false
	stop := context.AfterFunc(ctx, func() { _ = nc.SetWriteDeadline(time.Unix(1, 0)) })
	// Despite its name, it writes any encoded messages as they are, with
	// no copy into the connection's write buffer.
	err := pc.Frontend().SendUnbufferedEncodedCopyData(msgs)
	if !stop() {
		interrupted = true // the write deadline is being set, or was
	}
	switch {
	case interrupted:
		return fmt.Errorf("send statement: %w", context.Cause(ctx))
	case err != nil:
		return fmt.Errorf("send statement: %w", err)
	}
	return nil
}

// readWire reads the answer to a Bind, Execute and Sync up to its
// ReadyForQuery, calling row for each row (at most maxRows). A server's
// error is returned once the answer is read.
func readWire(ctx context.Context, pc *pgconn.PgConn, maxRows int, row func([][]byte) error) error {
	var pgErr error
	rows, other := 0, 0
	for {
		msg, err := pc.ReceiveMessage(ctx)
		if err != nil {
			return fmt.Errorf("read result: %w", err)
		}
		switch msg := msg.(type) {
		case *pgproto3.BindComplete, *pgproto3.CommandComplete:
		case *pgproto3.DataRow:
			if rows++; rows > maxRows {
				return fmt.Errorf("read result: more than %d rows", maxRows)
			}
			if pgErr == nil {
				if err := row(msg.Values); err != nil {
					return err
				}
			}
		case *pgproto3.ErrorResponse:
			pgErr = pgconn.ErrorResponseToPgError(msg)
		case *pgproto3.ReadyForQuery:
			return pgErr
		case *pgproto3.NoticeResponse, *pgproto3.ParameterStatus, *pgproto3.NotificationResponse:
			if other++; other > maxWireNotices {
				return fmt.Errorf("read result: more than %d notices", maxWireNotices)
			}
		default:
			return fmt.Errorf("read result: unexpected %T", msg)
		}
	}
}

// ingestedRow reads a row of ingestSQL's result in binary: the archive id
// and the status it has now.
func ingestedRow(row [][]byte) (uuid.UUID, hub.Status, error) {
	if len(row) != 2 || len(row[0]) != len(uuid.UUID{}) {
		return uuid.UUID{}, "", fmt.Errorf("ingest: unexpected result row of %d columns", len(row))
	}
	id := uuid.UUID(row[0])
	switch st := row[1]; string(st) { // no copy: the known statuses are constants
	case string(hub.Pending):
		return id, hub.Pending, nil
	case string(hub.Skipped):
		return id, hub.Skipped, nil
	case string(hub.Failed):
		return id, hub.Failed, nil
	default:
		return id, hub.Status(st), nil
	}
}
