package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Who may reach the app, and with how much. A browser lets any page send
// requests to 127.0.0.1: a page of another site whose name was rebound to
// 127.0.0.1 (DNS rebinding) is, to the browser, a page of that site, and
// may read the answers; a form of another site may post to /login. So
// every request, /mcp's too, must name a host this server serves, and
// every request that changes something must come from a page of this
// server's own origin; and every body is bounded, so that one request can
// neither fill the disk nor the memory.

const (
	// maxBody bounds every request body: 1 MiB. /mcp's are bounded by
	// mcpadapter at the same limit (mcpadapter.Options.MaxBodyBytes).
	maxBody = 1 << 20
	// maxMessage is the most characters a chat message has.
	maxMessage = 8000
)

// tooLarge is the answer to a body over maxBody.
var tooLarge = fmt.Sprintf("The request is larger than this server's limit of 1 MiB (%d bytes); send a smaller one: a chat message has at most %d characters.", maxBody, maxMessage)

// guard answers 403 to a request of a host the server does not serve, or
// a change asked for by a page of another origin; 413 to a body over
// maxBody; and passes the rest to next.
func (a *app) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := a.checkRequest(r); err != nil {
			httpError(w, http.StatusForbidden, err.Error())
			return
		}
		if r.URL.Path != "/mcp" { // mcpadapter bounds its own, and answers in JSON-RPC
			if r.ContentLength > maxBody {
				httpError(w, http.StatusRequestEntityTooLarge, tooLarge)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}
		next.ServeHTTP(w, r)
	})
}

// checkRequest is, for the whole app, the rule mcpadapter applies to /mcp
// on a loopback listener (mcpadapter.Options.AllowedHosts holds -host's
// names, so both agree): the Host header must be a loopback name, the
// address the request came to, or a name of -host. Its rule for Origin is
// stricter here, for the sake of the cookie, which a browser sends to
// every port of 127.0.0.1: a request that changes something (any method
// but GET, HEAD and OPTIONS) must come from a page of the request's own
// origin, as its Origin header says, or without one its Sec-Fetch-Site or
// Referer header; not from any loopback origin. A request without any of
// the three is no browser page's (curl, an MCP client), and a page
// cannot leave them out.
func (a *app) checkRequest(r *http.Request) error {
	if !a.serves(r) {
		//lint:ignore ST1005 the message is the 403 response body, a sentence that starts with the header's name
		return fmt.Errorf("Host %q is not a name this server serves (DNS rebinding protection): open the page at %s, or start notes-web with -host %s to serve that name.",
			r.Host, home(r, localAddr(r)), hostOnly(r.Host))
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	from := ""
	if origin := r.Header.Get("Origin"); origin != "" {
		if !sameOrigin(origin, r.Host) {
			from = fmt.Sprintf("Origin %q", origin)
		}
	} else if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		from = fmt.Sprintf("a %s page (Sec-Fetch-Site)", site)
	} else if ref := r.Referer(); ref != "" && !sameOrigin(ref, r.Host) {
		from = fmt.Sprintf("Referer %q", ref)
	}
	if from != "" {
		//lint:ignore ST1005 the message is the 403 response body, a sentence
		return fmt.Errorf("This request comes from %s, not from this server's own page, so it was refused and nothing changed (cross-site request protection): open the page at %s and do it there.",
			from, home(r, r.Host))
	}
	return nil
}

// serves reports whether the request's Host header names this server: a
// loopback name, the address the connection came to, or one of -host's.
func (a *app) serves(r *http.Request) bool {
	host := hostOnly(r.Host)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		local, _ := netip.ParseAddrPort(localAddr(r))
		if ip.IsLoopback() || ip.Unmap() == local.Addr().Unmap() {
			return true
		}
	}
	return slices.ContainsFunc(a.cfg.hosts, func(h string) bool { return strings.EqualFold(h, r.Host) || strings.EqualFold(h, host) })
}

// localAddr is the address the request came to, such as 127.0.0.1:8090.
func localAddr(r *http.Request) string {
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return addr.String()
	}
	return "127.0.0.1"
}

// home is the page's URL at hostport.
func home(r *http.Request, hostport string) string {
	if r.TLS != nil {
		return "https://" + hostport + "/"
	}
	return "http://" + hostport + "/"
}

// sameOrigin reports whether the origin (or URL) raw is a page of host.
func sameOrigin(raw, host string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, host)
}

func hostOnly(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return strings.Trim(hostport, "[]")
}

// readJSON decodes the request's body into v: false, with 413 answered,
// for a body over maxBody, and with 400 and usage for one that is not
// JSON.
func readJSON(w http.ResponseWriter, r *http.Request, v any, usage string) bool {
	err := json.NewDecoder(r.Body).Decode(v)
	switch {
	case isTooLarge(err):
		httpError(w, http.StatusRequestEntityTooLarge, tooLarge)
		return false
	case err != nil:
		httpError(w, http.StatusBadRequest, usage)
		return false
	}
	return true
}

// isTooLarge reports whether err is http.MaxBytesReader's, for a body
// over maxBody.
func isTooLarge(err error) bool {
	var over *http.MaxBytesError
	return errors.As(err, &over)
}

// messageTooLong is the refusal of a chat message over maxMessage
// characters, "" for one within it.
func messageTooLong(text string) string {
	if n := utf8.RuneCountInString(text); n > maxMessage {
		return fmt.Sprintf("The message has %d characters; the limit is %d. Send a shorter one, or split it into several.", n, maxMessage)
	}
	return ""
}
