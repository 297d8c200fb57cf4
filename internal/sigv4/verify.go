package sigv4

import (
	"crypto/subtle"
	"errors"
	"strings"
)

// Authorization is a parsed SigV4 Authorization header.
type Authorization struct {
	AccessKeyID   string
	Scope         Scope
	SignedHeaders []string
	Signature     string
}

// ErrMalformed is returned for an Authorization header that is not a
// SigV4 one.
var ErrMalformed = errors.New("sigv4: malformed authorization header")

// ParseAuthorization reads an "AWS4-HMAC-SHA256 Credential=…,
// SignedHeaders=…, Signature=…" header.
func ParseAuthorization(v string) (Authorization, error) {
	var a Authorization
	rest, ok := strings.CutPrefix(v, Algorithm+" ")
	if !ok {
		return a, ErrMalformed
	}
	var cred, signed string
	for part := range strings.SplitSeq(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return a, ErrMalformed
		}
		switch k {
		case "Credential":
			cred = val
		case "SignedHeaders":
			signed = val
		case "Signature":
			a.Signature = val
		default:
			return a, ErrMalformed
		}
	}
	f := strings.Split(cred, "/")
	if len(f) != 5 || f[4] != "aws4_request" || f[0] == "" || signed == "" || a.Signature == "" {
		return a, ErrMalformed
	}
	a.AccessKeyID = f[0]
	a.Scope = Scope{Date: f[1], Region: f[2], Service: f[3]}
	a.SignedHeaders = strings.Split(signed, ";")
	return a, nil
}

// Matches reports whether a's signature is the one secret makes for r at
// amzDate, over the headers a names.
func Matches(r Request, a Authorization, amzDate, secret string) bool {
	_, canonical := CanonicalRequest(r, append([]string(nil), a.SignedHeaders...))
	want := Signature(secret, a.Scope, amzDate, canonical)
	return subtle.ConstantTimeCompare([]byte(want), []byte(a.Signature)) == 1
}
