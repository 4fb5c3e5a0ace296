package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// Auth is how the console authenticates requests: HTTP basic auth with
// User and Password, a bearer token (Authorization: Bearer Token), or both.
// The zero value authenticates no one and lets everyone in, which CheckAddr
// allows only on a loopback address.
type Auth struct {
	User     string
	Password string
	Token    string
}

// Enabled reports whether any credential is configured.
func (a Auth) Enabled() bool { return a.Password != "" || a.Token != "" }

// Validate checks that basic auth has both a user and a password.
func (a Auth) Validate() error {
	if (a.User == "") != (a.Password == "") {
		return errors.New("basic auth needs both a user and a password (ui_user, ui_password)")
	}
	return nil
}

// ErrAuthRequired is returned by CheckAddr for a non-loopback address
// without credentials.
var ErrAuthRequired = errors.New("the web console listens beyond this machine only with authentication: " +
	"set ui_user and ui_password, or ui_token (or bind a loopback address such as 127.0.0.1:8080)")

// CheckAddr returns ErrAuthRequired when addr (host:port) is reachable from
// other machines and auth has no credential: a loopback IP or "localhost"
// needs none; an empty host, 0.0.0.0, [::] or any other address does.
func CheckAddr(addr string, auth Auth) error {
	if err := auth.Validate(); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("console address %q must be host:port: %w", addr, err)
	}
	if auth.Enabled() || isLoopback(host) {
		return nil
	}
	return fmt.Errorf("%w (address %s)", ErrAuthRequired, addr)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authenticate returns the name of the request's user ("" and false when
// auth is enabled and the request does not carry a valid credential).
// Credentials are compared in constant time (crypto/subtle), over SHA-256
// digests so that their lengths do not leak either.
func (a Auth) authenticate(r *http.Request) (string, bool) {
	if !a.Enabled() {
		return "", true
	}
	h := r.Header.Get("Authorization")
	if a.Token != "" {
		if tok, ok := strings.CutPrefix(h, "Bearer "); ok && equal(tok, a.Token) {
			return "token", true
		}
	}
	if a.Password != "" {
		if u, p, ok := r.BasicAuth(); ok {
			// Both compared whatever the first gives, so timing says nothing
			// about which one was wrong.
			uOK, pOK := equal(u, a.User), equal(p, a.Password)
			if uOK && pOK {
				return u, true
			}
		}
	}
	return "", false
}

func equal(a, b string) bool {
	x, y := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}

// csrf issues and checks the token every form of the console carries.
//
// Two defences guard every POST. http.CrossOriginProtection rejects
// requests a browser marks as cross-origin (Sec-Fetch-Site, else an Origin
// that is not the Host); it also guards River UI's JSON API, whose requests
// carry no form token. The token is the defence for browsers that send
// neither header: an HMAC-SHA256, under a key drawn at random when the
// process starts, of the authenticated user, compared in constant time. A
// page from another origin cannot read it (the same-origin policy), so it
// cannot forge a form post, and a restart invalidates every token issued.
// No cookie is needed: the user comes from the request's credentials.
type csrf struct{ key []byte }

func newCSRF() (*csrf, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("error drawing the CSRF key: %w", err)
	}
	return &csrf{key: key}, nil
}

// token is user's token.
func (c *csrf) token(user string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte("relay-console-csrf\x00" + user))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// valid reports whether tok is user's token.
func (c *csrf) valid(user, tok string) bool {
	want := c.token(user)
	return subtle.ConstantTimeCompare([]byte(tok), []byte(want)) == 1
}

// securityHeaders sets the headers every response of relay's pages carries:
// a content security policy that allows only the console's own resources
// (no inline script, no framing), no MIME sniffing, no referrer to other
// origins.
func securityHeaders(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// The content security policies: relay's pages load only their own
// stylesheet and script; River UI's single-page app also needs inline
// styles and data: images.
const (
	pageCSP  = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
	riverCSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
