package oauth

import "errors"

// The refusals of Verifier.Authenticate and Verifier.Verify. Every refusal
// of a token that was sent is a *TokenError wrapping one of them (or the
// error of Config.Principal); test with errors.Is.
var (
	// ErrNoToken: the request has no "Authorization: Bearer" header.
	ErrNoToken = errors.New("oauth: no bearer token")
	// ErrMalformed: the token is not a compact JWT, or its claims are
	// not the JSON of an access token (RFC 9068): a claim of the wrong
	// type, a claim named twice, no "exp" in a JWT, or no subject
	// ("sub").
	ErrMalformed = errors.New("oauth: malformed token")
	// ErrSignature: the token is unsigned ("alg": "none"), signed with an
	// algorithm not accepted (anything but RS*, PS*, ES* and EdDSA), or its
	// signature does not verify with the issuer's keys.
	ErrSignature = errors.New("oauth: token signature not verified")
	// ErrTokenType: the JWT's header says it is not an access token: its
	// "typ" is neither "at+jwt" nor, unless
	// Config.RequireAccessTokenType is set, "JWT" or absent.
	ErrTokenType = errors.New("oauth: not an access token")
	// ErrExpired: now is outside the token's validity ("exp" and "nbf"),
	// beyond the clock skew allowed.
	ErrExpired = errors.New("oauth: token expired")
	// ErrIssuer: the token's "iss" is not Config.Issuer.
	ErrIssuer = errors.New("oauth: token of another issuer")
	// ErrAudience: the token's "aud" does not name Config.Resource.
	ErrAudience = errors.New("oauth: token for another audience")
	// ErrInactive: the introspection endpoint says the token is not
	// active: expired, revoked, or never issued.
	ErrInactive = errors.New("oauth: token not active")
	// ErrUnavailable: the introspection endpoint failed to answer.
	ErrUnavailable = errors.New("oauth: authorization server unavailable")
)

// TokenError is the refusal of a token that was sent. Its Description says
// why in a sentence for the client's developer, without the token's
// secrets; an MCP server sends it as the error_description of its
// WWW-Authenticate header (RFC 6750 §3), with error="invalid_token".
type TokenError struct {
	// Description says why the token was refused and what to do, for the
	// client.
	Description string
	// Err is one of the Err* values of this package (or the error of
	// Config.Principal), wrapped with detail for the server's log.
	Err error
}

// Error returns Err's text: the detail for the log.
func (e *TokenError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *TokenError) Unwrap() error { return e.Err }

// BearerError returns the RFC 6750 error code, "invalid_token", and
// Description: mcpadapter puts them in the WWW-Authenticate header of its
// 401 response.
func (e *TokenError) BearerError() (code, description string) {
	return "invalid_token", e.Description
}
