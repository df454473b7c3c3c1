package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmtool/llmtool"
)

// Claims are what a verified access token says about its user and its
// grant: the claims of a JWT access token (RFC 9068), or the answer of the
// introspection endpoint (RFC 7662), which uses the same names.
type Claims struct {
	// Issuer is "iss": the authorization server that issued the token.
	Issuer string
	// Subject is "sub": the user, or the client for a token of the
	// client-credentials grant.
	Subject string
	// Audience is "aud": the resources the token is for.
	Audience []string
	// Expiry is "exp"; zero if the introspection answer has none.
	Expiry time.Time
	// Scopes are the space-separated "scope", or else "scp" (an array or
	// a space-separated string, as some servers send it). Never nil.
	Scopes []string
	// ClientID is "client_id", or else "azp": the client the token was
	// issued to.
	ClientID string
	// Raw holds every claim as encoding/json decodes it into an any, for
	// claims of the host's own such as "email", "groups" or "roles".
	Raw map[string]any
}

// wireClaims are the claims the checks read.
type wireClaims struct {
	Active    *bool       `json:"active"`
	Issuer    string      `json:"iss"`
	Subject   string      `json:"sub"`
	Audience  stringList  `json:"aud"`
	Expiry    numericDate `json:"exp"`
	NotBefore numericDate `json:"nbf"`
	Scope     string      `json:"scope"`
	Scp       stringList  `json:"scp"`
	ClientID  string      `json:"client_id"`
	AZP       string      `json:"azp"`
}

// decodeClaims decodes a JWT's payload or an introspection answer.
func decodeClaims(data []byte) (*wireClaims, Claims, error) {
	var w wireClaims
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, Claims{}, err
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, Claims{}, err
	}
	scopes := strings.Fields(w.Scope)
	if w.Scope == "" {
		for _, s := range w.Scp {
			scopes = append(scopes, strings.Fields(s)...)
		}
	}
	if scopes == nil {
		scopes = []string{}
	}
	c := Claims{
		Issuer:   w.Issuer,
		Subject:  w.Subject,
		Audience: slices.Clone([]string(w.Audience)),
		Expiry:   w.Expiry.time(),
		Scopes:   scopes,
		ClientID: w.ClientID,
		Raw:      raw,
	}
	if c.ClientID == "" {
		c.ClientID = w.AZP
	}
	if c.Audience == nil {
		c.Audience = []string{}
	}
	return &w, c, nil
}

// check applies the checks every token gets, however it was verified: its
// issuer, its audience and its validity period at now, give or take skew.
// An introspection answer may leave out "iss" and "exp"; a JWT may not.
func (v *Verifier) check(w *wireClaims, c Claims, now time.Time, jwt bool) error {
	switch {
	case c.Issuer == "" && jwt:
		return &TokenError{Description: "The access token names no issuer; get a token from " + v.cfg.Issuer + ".",
			Err: fmt.Errorf(`%w: no "iss" claim`, ErrIssuer)}
	case c.Issuer != "" && c.Issuer != v.cfg.Issuer:
		return &TokenError{Description: fmt.Sprintf("The access token was issued by %s, not by %s; get a token from %s.", c.Issuer, v.cfg.Issuer, v.cfg.Issuer),
			Err: fmt.Errorf("%w: %q, want %q", ErrIssuer, c.Issuer, v.cfg.Issuer)}
	case !slices.Contains(c.Audience, v.cfg.Resource):
		return &TokenError{Description: fmt.Sprintf("The access token is not for this server: its audience is %s, not %s; get a token with the resource parameter %s (RFC 8707).", describeAudience(c.Audience), v.cfg.Resource, v.cfg.Resource),
			Err: fmt.Errorf("%w: %q, want %q", ErrAudience, c.Audience, v.cfg.Resource)}
	case w.Expiry.isZero() && jwt:
		return &TokenError{Description: "The access token has no expiry time; this server accepts only tokens that expire.",
			Err: fmt.Errorf(`%w: no "exp" claim`, ErrMalformed)}
	case !w.Expiry.isZero() && now.After(c.Expiry.Add(v.skew)):
		return &TokenError{Description: fmt.Sprintf("The access token expired at %s; get a new one from the authorization server.", c.Expiry.UTC().Format(time.RFC3339)),
			Err: fmt.Errorf("%w at %s, more than %s before now", ErrExpired, c.Expiry.UTC().Format(time.RFC3339), v.skew)}
	case !w.NotBefore.isZero() && now.Add(v.skew).Before(w.NotBefore.time()):
		nbf := w.NotBefore.time().UTC().Format(time.RFC3339)
		return &TokenError{Description: fmt.Sprintf("The access token is not valid before %s; check the clocks of this server and the authorization server.", nbf),
			Err: fmt.Errorf("%w: not valid before %s, more than %s after now", ErrExpired, nbf, v.skew)}
	case c.Subject == "" && c.ClientID == "":
		return &TokenError{Description: "The access token names neither a subject nor a client; this server needs to know who calls.",
			Err: fmt.Errorf(`%w: no "sub" and no "client_id" claim`, ErrMalformed)}
	}
	return nil
}

func describeAudience(aud []string) string {
	if len(aud) == 0 {
		return "empty"
	}
	return strings.Join(aud, ", ")
}

// principal maps verified claims to the principal calls run as.
func (v *Verifier) principal(c Claims) (*llmtool.Principal, error) {
	if v.cfg.Principal == nil {
		return DefaultPrincipal(c)
	}
	p, err := v.cfg.Principal(c)
	if err == nil && p == nil {
		err = errors.New("Config.Principal returned no principal")
	}
	if err != nil {
		var te *TokenError
		if errors.As(err, &te) {
			return nil, err
		}
		return nil, &TokenError{Description: "The access token's user may not use this server; sign in as another user.",
			Err: fmt.Errorf("oauth: Config.Principal refused subject %q: %w", c.Subject, err)}
	}
	if p.Scopes == nil {
		// A token's principal is limited by its scopes, always: nil
		// would let it call every tool.
		p.Scopes = slices.Clone(c.Scopes)
	}
	return p, nil
}

// DefaultPrincipal is the principal of a token when Config.Principal is
// nil: ID is the subject ("sub", or the client ID for a token without
// one); Name is "name", "preferred_username" or "username", the first
// present; Scopes are the token's scopes (never nil, so the principal is
// limited to the tools its scopes allow, see llmtool.Scopes); Attrs holds
// "client_id" when the token names its client. A Config.Principal of the
// host's own can start from it.
func DefaultPrincipal(c Claims) (*llmtool.Principal, error) {
	p := &llmtool.Principal{ID: c.Subject, Scopes: slices.Clone(c.Scopes)}
	if p.ID == "" {
		p.ID = c.ClientID
	}
	if p.Scopes == nil {
		p.Scopes = []string{}
	}
	for _, k := range []string{"name", "preferred_username", "username"} {
		if s, ok := c.Raw[k].(string); ok && s != "" {
			p.Name = s
			break
		}
	}
	if c.ClientID != "" {
		p.Attrs = map[string]string{"client_id": c.ClientID}
	}
	return p, nil
}

// stringList is a claim that is a string or an array of strings, as "aud"
// (RFC 7519 §4.1.3) and "scp" are.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*l = nil
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		*l = stringList{s}
		return nil
	}
	var a []string
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("want a string or an array of strings, not %s", b)
	}
	*l = a
	return nil
}

// numericDate is a NumericDate claim (RFC 7519 §2): seconds since the
// epoch, maybe fractional. The zero value means absent.
type numericDate struct {
	t   time.Time
	set bool
}

func (d *numericDate) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*d = numericDate{}
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(f, 0) || math.Abs(f) > 1e12 {
		return fmt.Errorf("want a number of seconds since 1970, not %s", b)
	}
	sec, frac := math.Modf(f)
	*d = numericDate{t: time.Unix(int64(sec), int64(frac*1e9)), set: true}
	return nil
}

func (d numericDate) isZero() bool    { return !d.set }
func (d numericDate) time() time.Time { return d.t }
