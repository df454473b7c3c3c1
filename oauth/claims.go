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

	josejson "github.com/go-jose/go-jose/v4/json"

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

// decodeClaims decodes a JWT's payload or an introspection answer with
// go-jose's JSON decoder, which, unlike encoding/json, matches member
// names exactly ("SCOPE" is not "scope") and refuses an object that names
// a member twice: a claim means here what it means to the issuer, and to
// any other library that reads the token.
func decodeClaims(data []byte) (*wireClaims, Claims, error) {
	var w wireClaims
	if err := josejson.Unmarshal(data, &w); err != nil {
		return nil, Claims{}, err
	}
	var raw map[string]any
	if err := josejson.Unmarshal(data, &raw); err != nil {
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
	case c.Subject == "":
		return &TokenError{Description: `The access token names no subject ("sub"); this server runs each call as the token's subject, so it accepts only tokens that name one (RFC 9068).`,
			Err: fmt.Errorf(`%w: no "sub" claim`, ErrMalformed)}
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
	switch {
	case err != nil:
	case p == nil:
		err = errors.New("Config.Principal returned no principal")
	case p.ID == "":
		err = errors.New("Config.Principal returned a principal without an ID")
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
		// would let it call every tool. A copy: the hook may return a
		// principal the host shares, such as the one its own sign-in
		// uses, which must stay unlimited.
		q := *p
		q.Scopes = slices.Clone(c.Scopes)
		p = &q
	}
	return p, nil
}

// PrincipalPrefix begins the ID of every principal DefaultPrincipal makes:
// "oauth:" and the token's subject, such as "oauth:248289761001". Hosts
// give the principals they authenticate themselves (a static bearer
// token, a session cookie) IDs that do not begin with it, so that no
// token's subject can pass for one of them: approvals, sessions, limits
// and audit records tell principals apart by ID.
const PrincipalPrefix = "oauth:"

// DefaultPrincipal is the principal of a token when Config.Principal is
// nil: ID is PrincipalPrefix followed by the subject ("sub"), never the
// client ID; Name is "name", "preferred_username" or "username", the first
// present; Scopes are the token's scopes (never nil, so the principal is
// limited to the tools its scopes allow, see llmtool.Scopes); Attrs holds
// "client_id" when the token names its client. It refuses claims without
// a subject. A Config.Principal of the host's own can start from it.
//
// A subject is unique at its issuer only: a server that accepts the
// tokens of several issuers (a Verifier for each) qualifies the IDs of
// each in Config.Principal, such as with
// PrincipalPrefix + c.Issuer + "#" + c.Subject ("#" cannot occur in an
// issuer identifier, so no two issuers' IDs meet).
func DefaultPrincipal(c Claims) (*llmtool.Principal, error) {
	if c.Subject == "" {
		return nil, errors.New(`oauth: DefaultPrincipal: the claims name no subject ("sub")`)
	}
	p := &llmtool.Principal{ID: PrincipalPrefix + c.Subject, Scopes: slices.Clone(c.Scopes)}
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
