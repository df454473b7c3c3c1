// Package oauth makes an HTTP server, such as an MCP server of package
// mcpadapter, an OAuth 2.1 resource server: it accepts the bearer access
// tokens an authorization server issued for it, and tells clients where to
// get one.
//
// # Tokens
//
// A Verifier checks a request's "Authorization: Bearer" token and returns
// the llmtool.Principal its calls run as, with the token's scopes
// (Principal.Scopes), so that a token sees and calls only the tools whose
// llmtool.Scopes it grants. A token is either a JWT access token (RFC
// 9068), verified against the issuer's JSON Web Key Set, or, with
// Config.Introspection, an opaque token the issuer's introspection endpoint
// vouches for (RFC 7662). Either way the token must come from
// Config.Issuer, name this server's Config.Resource in its audience (RFC
// 8707: a token for another server is refused, so a server cannot replay
// the tokens it receives), be within its validity period, give or take
// Config.ClockSkew, and name its subject ("sub").
//
// Claims, and the members of an introspection answer, are read by their
// exact names ("SCOPE" is not "scope", as encoding/json would have it),
// and a token or answer that names one twice is refused: a claim means
// here what it means to the issuer.
//
// A JWT's header "typ" says which kind of token it is (RFC 8725 §3.11),
// compared as a media type (any case, "application/" optional): "at+jwt"
// is accepted; the generic "JWT" and no "typ", as many issuers send their
// access tokens, unless Config.RequireAccessTokenType is set, which keeps
// the issuer's other JWTs, such as its ID tokens, from passing for access
// tokens; any other type, such as "logout+jwt", never.
//
// # Principals
//
// A token's principal has the ID PrincipalPrefix + subject, such as
// "oauth:248289761001" (DefaultPrincipal): principals are told apart by ID
// (approvals, sessions, limits, audit), and a host's own principals, such
// as that of a static bearer token, have IDs without the prefix, so no
// token can pass for one of them by naming its ID as subject. A token
// without a subject is refused, whatever client ("client_id", "azp") it
// names: a client ID is never a principal's ID. Config.Principal is the
// one place to map subjects to the host's own users instead, deliberately;
// a server that accepts the tokens of several issuers qualifies the IDs
// there with the issuer (see DefaultPrincipal).
//
// # Keys
//
// JWT signatures are verified with github.com/go-jose/go-jose against the
// issuer's key set, which is fetched on first use, cached, fetched again
// after an hour, so that a withdrawn key stops verifying, and fetched
// again when a token names a key the cache does not hold, so that the
// issuer can rotate its keys. Tokens with made-up key IDs cannot make this
// server flood the issuer: a key ID that a fetch did not find is refused
// without another fetch for ten seconds (however many tokens name it; a
// bounded number of such key IDs is remembered), and fetches begin at
// least a second apart whatever the key IDs. A token with a new key ID
// waits for the next fetch rather than being refused, so a rotated key
// verifies on its first token even right after a flood. A token whose key
// is known but whose signature does not verify is refused without a
// fetch. Only asymmetric signatures are accepted (RS*, PS*, ES*, EdDSA):
// never "none", never an HMAC keyed with a public key.
//
// # Discovery
//
// New finds the key set and the introspection endpoint in the issuer's
// metadata: at /.well-known/oauth-authorization-server (RFC 8414), else at
// /.well-known/openid-configuration (OpenID Connect Discovery), with the
// issuer's path inserted or appended as MCP clients look for them. The
// document must name Config.Issuer as its issuer.
//
// # Telling clients
//
// Verifier.Metadata serves the protected resource metadata (RFC 9728) at
// Verifier.MetadataPath: this server's resource identifier, its
// authorization server and the scopes it knows. mcpadapter announces its
// URL, Verifier.MetadataURL, in the WWW-Authenticate header of every 401,
// and answers a call of a tool whose scopes the token lacks with 403 and
// error="insufficient_scope", so the client can ask for them. Wiring an MCP
// server:
//
//	v, err := oauth.New(ctx, oauth.Config{Issuer: "https://auth.example.com", Resource: "https://mcp.example.com/mcp"})
//	...
//	srv := mcpadapter.New(reg, &mcpadapter.Options{Authenticator: v, ResourceMetadata: v.MetadataURL()})
//	mux.Handle(v.MetadataPath(), v.Metadata())
//	mux.Handle("/mcp", srv.Handler())
package oauth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejson "github.com/go-jose/go-jose/v4/json"

	"github.com/llmtool/llmtool"
)

// Defaults of Config.
const (
	// defaultClockSkew is how far a token may be past its expiry, or
	// before its "nbf", and still be accepted: clocks differ.
	defaultClockSkew = time.Minute
	// defaultTimeout bounds each request to the authorization server
	// (metadata, key set, introspection) when Config.HTTPClient is nil.
	defaultTimeout = 10 * time.Second
)

// signingAlgorithms are the JWS algorithms accepted: the asymmetric ones.
// "none" and the HMACs are not among them: an HMAC "verified" with the
// issuer's public key would accept tokens anyone can make.
var signingAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.EdDSA,
}

func accepted(alg string) bool {
	return slices.Contains(signingAlgorithms, jose.SignatureAlgorithm(alg))
}

// Config configures a Verifier. Issuer and Resource are required; every
// other field has a default.
type Config struct {
	// Issuer is the authorization server's issuer identifier, such as
	// "https://auth.example.com" or "https://auth.example.com/realms/main":
	// its metadata is discovered from it, and a token's "iss" must equal
	// it, character for character. It has no query and no fragment.
	Issuer string

	// Resource is this server's resource identifier: the URL MCP clients
	// connect to, such as "https://mcp.example.com/mcp". A token's "aud"
	// must include it, character for character (clients ask for it with
	// the resource parameter of RFC 8707), and the protected resource
	// metadata names it. It has no query and no fragment.
	Resource string

	// JWKSURL is the URL of the issuer's JSON Web Key Set. Default: the
	// "jwks_uri" of the issuer's metadata. With JWKSURL set and no
	// Introspection, New makes no request.
	JWKSURL string

	// Introspection, when set, has every token checked by the issuer's
	// introspection endpoint (RFC 7662) instead of verified as a JWT: for
	// opaque tokens, or to notice revoked tokens at once. Each request
	// then makes one request to the endpoint. Default: nil, tokens are
	// JWTs.
	Introspection *Introspection

	// ScopesSupported are the scopes this server's tools declare (see
	// llmtool.Scopes), listed in the protected resource metadata: clients
	// ask for them when they authorize. Default: none listed.
	ScopesSupported []string

	// ClockSkew is how far a token may be past its "exp", or before its
	// "nbf", and still be accepted. Default (0): a minute; a
	// negative value allows none.
	ClockSkew time.Duration

	// HTTPClient makes the requests to the authorization server. Default
	// (nil): a client with a timeout of 10 seconds.
	HTTPClient *http.Client

	// RequireAccessTokenType refuses every JWT whose header does not say
	// "typ": "at+jwt" (RFC 9068 §2.1; "application/at+jwt", in any case,
	// too), one without "typ" or with "JWT" included. Set it when the
	// issuer types its access tokens so, as RFC 9068 asks: then no other
	// JWT it signs, such as an ID token, passes for an access token, even
	// one whose audience names this server. Default (false): "at+jwt",
	// the generic "JWT" ("application/jwt") and no "typ" at all are
	// accepted, as many issuers type their access tokens "JWT" or not at
	// all; any other type, such as "logout+jwt" or "dpop+jwt", says the
	// token is of another kind and is refused either way. Ignored with
	// Introspection, where the issuer vouches for the token.
	RequireAccessTokenType bool

	// Principal maps a verified token's claims to the principal calls run
	// as: the one place to map the issuer's subjects to the host's own
	// users. An error refuses the token (a *TokenError keeps its
	// Description, any other error is described as a user who may not use
	// the server), as does a principal without an ID. A principal returned
	// with nil Scopes runs as a copy with the token's: a token never calls
	// beyond its scopes. Only tokens that name a subject ("sub") get here.
	// Default (nil): DefaultPrincipal, whose IDs begin with
	// PrincipalPrefix so that no subject can pass for a principal the
	// host authenticates otherwise; a mapping of the host's own keeps
	// that property, or maps a subject to a user deliberately.
	Principal func(Claims) (*llmtool.Principal, error)
}

// Introspection configures token introspection (RFC 7662).
type Introspection struct {
	// URL is the introspection endpoint. Default: the
	// "introspection_endpoint" of the issuer's metadata.
	URL string
	// ClientID and ClientSecret are this server's credentials at the
	// authorization server, sent with HTTP Basic authentication
	// (client_secret_basic). Both are required.
	ClientID, ClientSecret string
}

// Verifier checks the bearer tokens of requests for one resource server.
// It is an mcpadapter.Authenticator. Make one with New and share it: it
// caches the issuer's keys. It is safe for concurrent use.
type Verifier struct {
	cfg           Config
	skew          time.Duration
	client        *http.Client
	keys          *keySet        // nil with introspection
	introspection *Introspection // nil for JWTs
	now           func() time.Time
	metadata      []byte // the protected resource metadata document
	metadataPath  string
}

// New returns a Verifier for cfg, after discovering the issuer's metadata
// if it needs to (see the package documentation). ctx bounds the
// discovery; the key set is fetched later, when the first token comes.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	if err := checkURL("Issuer", cfg.Issuer); err != nil {
		return nil, err
	}
	if err := checkURL("Resource", cfg.Resource); err != nil {
		return nil, err
	}
	if in := cfg.Introspection; in != nil && (in.ClientID == "" || in.ClientSecret == "") {
		return nil, errors.New("oauth: Config.Introspection needs a ClientID and a ClientSecret: the credentials this server authenticates with at the introspection endpoint")
	}
	v := &Verifier{cfg: cfg, skew: cfg.ClockSkew, client: cfg.HTTPClient, now: time.Now}
	v.cfg.ScopesSupported = append([]string(nil), cfg.ScopesSupported...)
	switch {
	case v.skew == 0:
		v.skew = defaultClockSkew
	case v.skew < 0:
		v.skew = 0
	}
	if v.client == nil {
		v.client = &http.Client{Timeout: defaultTimeout}
	}
	jwksURL := cfg.JWKSURL
	if cfg.Introspection != nil {
		in := *cfg.Introspection
		v.introspection = &in
	}
	if (v.introspection == nil && jwksURL == "") || (v.introspection != nil && v.introspection.URL == "") {
		md, err := discover(ctx, v.client, cfg.Issuer)
		if err != nil {
			return nil, err
		}
		switch {
		case v.introspection != nil && md.IntrospectionEndpoint == "":
			return nil, fmt.Errorf("oauth: the metadata of issuer %s has no introspection_endpoint; set Config.Introspection.URL", cfg.Issuer)
		case v.introspection != nil:
			v.introspection.URL = md.IntrospectionEndpoint
		case md.JWKSURI == "":
			return nil, fmt.Errorf("oauth: the metadata of issuer %s has no jwks_uri; set Config.JWKSURL, or Config.Introspection for opaque tokens", cfg.Issuer)
		default:
			jwksURL = md.JWKSURI
		}
	}
	if v.introspection == nil {
		v.keys = &keySet{url: jwksURL, client: v.client, now: func() time.Time { return v.now() }, after: time.After}
	}
	if err := v.initMetadata(); err != nil {
		return nil, err
	}
	return v, nil
}

// checkURL checks that a Config URL is absolute http(s), without a query
// or a fragment, as issuer identifiers (RFC 8414 §2) and resource
// identifiers (RFC 8707 §2) are.
func checkURL(field, s string) error {
	if s == "" {
		return fmt.Errorf("oauth: Config.%s is required", field)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("oauth: Config.%s: %w", field, err)
	case (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return fmt.Errorf("oauth: Config.%s %q is not an absolute https URL", field, s)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("oauth: Config.%s %q has a fragment; leave it out", field, s)
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Errorf("oauth: Config.%s %q has a query; leave it out", field, s)
	}
	return nil
}

// Authenticate returns the principal of r's bearer token (see Verify), or
// ErrNoToken when r has no "Authorization: Bearer" header. It makes a
// Verifier an mcpadapter.Authenticator. Tokens in the URL or the form body
// are not looked at (bearer_methods_supported is "header" only).
func (v *Verifier) Authenticate(r *http.Request) (*llmtool.Principal, error) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, ErrNoToken
	}
	return v.Verify(r.Context(), token)
}

// Verify checks an access token and returns the principal its calls run
// as (Config.Principal, or DefaultPrincipal). A refused token gets a
// *TokenError wrapping ErrMalformed, ErrSignature, ErrTokenType,
// ErrExpired, ErrIssuer, ErrAudience, ErrInactive or ErrUnavailable.
func (v *Verifier) Verify(ctx context.Context, token string) (*llmtool.Principal, error) {
	var payload []byte
	var err error
	if v.keys != nil {
		payload, err = v.verifyJWT(ctx, token)
	} else {
		payload, err = v.introspect(ctx, token)
	}
	if err != nil {
		return nil, err
	}
	w, c, err := decodeClaims(payload)
	if err != nil {
		return nil, &TokenError{Description: "The access token's claims are malformed; get a new token from the authorization server.",
			Err: fmt.Errorf("%w: claims: %w", ErrMalformed, err)}
	}
	if v.introspection != nil && (w.Active == nil || !*w.Active) {
		return nil, &TokenError{Description: "The access token is not active: it expired, was revoked or was never issued; get a new one from the authorization server.",
			Err: fmt.Errorf("%w: the introspection endpoint answered active=false", ErrInactive)}
	}
	if err := v.check(w, c, v.now(), v.keys != nil); err != nil {
		return nil, err
	}
	return v.principal(c)
}

// verifyJWT verifies a JWT's format, algorithm and signature and returns
// its payload. Its claims are checked by check, as an introspection
// answer's are.
func (v *Verifier) verifyJWT(ctx context.Context, token string) ([]byte, error) {
	if strings.Count(token, ".") != 2 {
		return nil, &TokenError{Description: "The access token is not a JWT; send the access token the authorization server issued.",
			Err: fmt.Errorf("%w: not a compact JWT", ErrMalformed)}
	}
	jws, err := jose.ParseSignedCompact(token, signingAlgorithms)
	if err != nil {
		if alg := headerAlgorithm(token); alg != "" && !accepted(alg) {
			return nil, &TokenError{Description: fmt.Sprintf("The access token is signed with the algorithm %s, which this server does not accept; get a new token from the authorization server.", alg),
				Err: fmt.Errorf("%w: algorithm %q not accepted", ErrSignature, alg)}
		}
		return nil, &TokenError{Description: "The access token is not a well-formed JWT; send the access token the authorization server issued.",
			Err: fmt.Errorf("%w: %w", ErrMalformed, err)}
	}
	if err := checkType(jws.Signatures[0].Protected, v.cfg.RequireAccessTokenType); err != nil {
		return nil, err
	}
	return v.keys.verify(ctx, jws)
}

// checkType checks the "typ" of a JWT's protected header (RFC 9068 §2.1,
// RFC 8725 §3.11), compared as a media type: in any case, with or without
// "application/" (RFC 7515 §4.1.9). "at+jwt" is accepted; "JWT" and no
// "typ" only when strict is not set; any other type never.
func checkType(h jose.Header, strict bool) error {
	v, present := h.ExtraHeaders[jose.HeaderType]
	typ, ok := v.(string)
	switch t := strings.TrimPrefix(strings.ToLower(typ), "application/"); {
	case present && !ok:
		return &TokenError{Description: "The token's type (typ) is not a string; send the access token the authorization server issued.",
			Err: fmt.Errorf(`%w: header "typ" is %v, not a string`, ErrTokenType, v)}
	case t == "at+jwt", !strict && (!present || t == "jwt"):
		return nil
	case !present:
		return &TokenError{Description: "The token does not say it is an access token (its header has no typ at+jwt), and this server accepts only access tokens that do (RFC 9068); send the access token the authorization server issued.",
			Err: fmt.Errorf(`%w: no header "typ", want "at+jwt"`, ErrTokenType)}
	}
	return &TokenError{Description: fmt.Sprintf("The token's type (typ) is %s, not at+jwt: it is not an access token (RFC 9068) but another kind of token, such as an ID token; send the access token the authorization server issued.", typ),
		Err: fmt.Errorf(`%w: header "typ" is %q, want "at+jwt"`, ErrTokenType, typ)}
}

// headerAlgorithm returns the "alg" of a compact JWS's header, or "".
func headerAlgorithm(token string) string {
	seg, _, _ := strings.Cut(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(seg)
	var h struct {
		Alg string `json:"alg"`
	}
	if err != nil || josejson.Unmarshal(b, &h) != nil {
		return ""
	}
	return h.Alg
}
