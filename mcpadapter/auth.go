package mcpadapter

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/llmtool/llmtool"
)

// The HTTP handlers answer as an OAuth 2.1 resource server does (RFC 6750
// §3, MCP authorization): a request without a valid token gets 401 with a
// challenge that says why and where the protected resource metadata is
// (Options.ResourceMetadata); a call of a tool whose scopes the token does
// not grant gets 403 with error="insufficient_scope" and the scopes to
// authorize again with. Package oauth verifies tokens and serves the
// metadata.

// BearerError is implemented by an Authenticator's error that says why a
// bearer token was refused, in the terms of RFC 6750 §3.1: an error code,
// such as "invalid_token", and a description for the client's developer.
// They become the error and error_description of the 401 response's
// WWW-Authenticate header. *oauth.TokenError implements it; a refusal
// that does not is described as a missing, malformed, expired or revoked
// token.
type BearerError interface {
	error
	BearerError() (code, description string)
}

// unauthorized answers 401 with the challenge of RFC 6750 §3 (and RFC
// 9728's resource_metadata when configured). A request that sent no
// credentials gets no error code, as RFC 6750 §3.1 prescribes; one whose
// token was refused gets the refusal's code and description (BearerError).
func (h *httpHandler) unauthorized(w http.ResponseWriter, r *http.Request, err error) {
	var params []string
	if r.Header.Get("Authorization") != "" {
		code, desc := "invalid_token", "The access token is missing, malformed, expired or revoked"
		var be BearerError
		if errors.As(err, &be) {
			if c, d := be.BearerError(); c != "" {
				code, desc = c, cmp.Or(d, desc)
			}
		}
		params = append(params, "error", code, "error_description", desc)
	}
	w.Header().Set("WWW-Authenticate", h.challenge(params...))
	writeError(w, http.StatusUnauthorized, "Authentication required: send a valid bearer token in the Authorization header.")
}

// scopeRefused answers 403 Forbidden with the insufficient_scope challenge
// of RFC 6750 §3.1 to a tools/call or prompts/get of a tool whose Scopes
// the request's principal does not all have (see llmtool.Scopes), and
// reports whether it did. The challenge's scope lists the scopes the token
// has, then the ones the tool needs besides, so that the client can
// authorize again for all of them without losing any (step-up
// authorization, as the MCP specification recommends). Listings need no
// such check: they already leave out what the principal may not call.
// Over stdio there is no token, so no check.
func (h *httpHandler) scopeRefused(ctx context.Context, w http.ResponseWriter, body []byte) bool {
	p := llmtool.PrincipalFrom(ctx)
	if p == nil || p.Scopes == nil || !(bytes.Contains(body, []byte(mcp.MethodToolsCall)) || bytes.Contains(body, []byte(mcp.MethodPromptsGet))) {
		return false
	}
	var msg message
	if json.Unmarshal(body, &msg) != nil {
		return false // mcp-go answers the parse error
	}
	kind := "Tool"
	switch msg.Method {
	case string(mcp.MethodToolsCall):
	case string(mcp.MethodPromptsGet):
		kind = "Prompt"
	default:
		return false
	}
	spec, ok := h.s.reg.Tool(ctx, msg.Params.Name)
	if !ok || spec.URI != "" || spec.Prompt != (kind == "Prompt") {
		return false // unknown to this method: mcp-go and the registry answer
	}
	missing := spec.MissingScopes(p)
	if len(missing) == 0 {
		return false
	}
	want := slices.Clone(p.Scopes)
	for _, sc := range spec.Scopes {
		if !slices.Contains(want, sc) {
			want = append(want, sc)
		}
	}
	need := strings.Join(missing, " ")
	h.s.cfg.Logger.Info("mcpadapter: insufficient scope", "principal", p.ID, "tool", spec.Name, "missing", need)
	w.Header().Set("WWW-Authenticate", h.challenge(
		"error", "insufficient_scope",
		"error_description", fmt.Sprintf("%s %s needs the scope %s, which the access token does not grant", kind, spec.Name, need),
		"scope", strings.Join(want, " ")))
	writeRPC(w, http.StatusForbidden, msg.ID, mcp.INVALID_REQUEST, fmt.Sprintf(
		"%s %q needs the scope %s, which this sign-in does not grant; authorize again with the scopes in the WWW-Authenticate header, then send the request again.",
		kind, spec.Name, need))
	return true
}

// challenge returns a Bearer challenge with the realm, the attributes
// given as name, value pairs, and resource_metadata when configured.
func (h *httpHandler) challenge(attrs ...string) string {
	var b strings.Builder
	b.WriteString(`Bearer realm="mcp"`)
	if h.s.cfg.ResourceMetadata != "" {
		attrs = append(attrs, "resource_metadata", h.s.cfg.ResourceMetadata)
	}
	for i := 0; i+1 < len(attrs); i += 2 {
		fmt.Fprintf(&b, `, %s="%s"`, attrs[i], quotable(attrs[i+1]))
	}
	return b.String()
}

// quotable returns s with the characters a quoted attribute of RFC 6750
// §3 may not hold replaced: '"' and '\' by "'" and "/", control and
// non-ASCII characters by '?'.
func quotable(s string) string {
	return strings.Map(func(c rune) rune {
		switch {
		case c == '"':
			return '\''
		case c == '\\':
			return '/'
		case c < 0x20 || c > 0x7e:
			return '?'
		}
		return c
	}, s)
}
