package mcpadapter

import (
	"bufio"
	"context"
	"io"
	"log"
	"strings"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves one client over a pair of streams, usually os.Stdin and
// os.Stdout, until in ends or ctx is cancelled. Calls run as the principal
// and in the tenant of Options.Principal and Options.Tenant (or those
// already in ctx). Log lines of mcp-go's transport go to the adapter's
// logger, never to out, which carries only protocol messages.
//
// mcp-go keeps one stdio session per process, so run at most one
// ServeStdio at a time in a process. That session keeps its queue of
// notifications too: what one ServeStdio left queued when it ended, the
// next one in the process writes before its initialize response.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ex := &exchange{}
	ex.box = &ex.own
	ctx = withExchange(s.callContext(ctx), ex)
	ctx = server.WithSupportedProtocolVersions(ctx, protocolVersions())
	ss := server.NewStdioServer(s.mcp)
	ss.SetErrorLogger(log.New(slogWriter{s}, "", 0))
	w := &lineWriter{out: out, ex: ex}
	return ss.Listen(ctx, &checkedInput{in: bufio.NewReader(in), out: w}, w)
}

// checkedInput is the input ServeStdio hands mcp-go: the lines of in that
// checkMessage lets through (jsonrpc.go). It answers a line it refuses
// itself, on out, and reads on.
type checkedInput struct {
	in   *bufio.Reader
	out  *lineWriter
	line []byte // what mcp-go has not read yet of the line let through
	err  error  // in's, once line is read
}

func (c *checkedInput) Read(p []byte) (int, error) {
	for len(c.line) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		var line []byte
		line, c.err = c.in.ReadBytes('\n')
		if id, bad := checkMessage(line); bad != nil {
			if err := c.out.line(errorResponse(id, bad.code, bad.message)); err != nil {
				return 0, err
			}
			continue
		}
		c.line = line
	}
	n := copy(p, c.line)
	c.line = c.line[n:]
	return n, nil
}

// slogWriter forwards mcp-go's log.Logger lines to the adapter's logger.
type slogWriter struct{ s *Server }

func (w slogWriter) Write(p []byte) (int, error) {
	w.s.cfg.Logger.Warn("mcpadapter: stdio transport", "msg", strings.TrimRight(string(p), "\r\n"))
	return len(p), nil
}
