package oauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// introspect asks the introspection endpoint about token (RFC 7662 §2)
// and returns its answer, a JSON object of claims with "active".
func (v *Verifier) introspect(ctx context.Context, token string) ([]byte, error) {
	in := v.introspection
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, unavailable(fmt.Errorf("%w: %w", ErrUnavailable, err))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// client_secret_basic: each part form-encoded first (RFC 6749 §2.3.1).
	req.SetBasicAuth(url.QueryEscape(in.ClientID), url.QueryEscape(in.ClientSecret))
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, unavailable(fmt.Errorf("%w: introspection: %w", ErrUnavailable, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	switch {
	case err != nil:
		return nil, unavailable(fmt.Errorf("%w: introspection: reading the answer: %w", ErrUnavailable, err))
	case resp.StatusCode != http.StatusOK:
		return nil, unavailable(fmt.Errorf("%w: introspection endpoint %s answered %s", ErrUnavailable, in.URL, resp.Status))
	case len(body) > maxDocument:
		return nil, unavailable(fmt.Errorf("%w: introspection: the answer is larger than %d bytes", ErrUnavailable, maxDocument))
	}
	return body, nil
}

func unavailable(err error) *TokenError {
	return &TokenError{Description: "The authorization server could not be asked whether the access token is valid; try again later.", Err: err}
}
