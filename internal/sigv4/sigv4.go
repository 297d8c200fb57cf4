// Package sigv4 signs HTTP requests with AWS Signature Version 4, the
// scheme Bedrock (and every other AWS service) authenticates with, and
// checks such signatures for the mock upstream's Bedrock face.
//
// It owns the canonical request, the string to sign, the signing key
// derivation and the Authorization header; it knows nothing of Bedrock's
// bodies, of host keys or of how a request is sent. It never logs and
// never puts the secret access key in anything it returns.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Algorithm is the only signing algorithm this package speaks.
const Algorithm = "AWS4-HMAC-SHA256"

// TimeFormat is the layout of X-Amz-Date; DateFormat that of the date in
// a credential scope.
const (
	TimeFormat = "20060102T150405Z"
	DateFormat = "20060102"
)

// EmptyPayloadHash is the SHA-256 of an empty body, in hex.
const EmptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// Credentials is one AWS access key: its id, its secret and, for
// temporary credentials, the session token that goes with them.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
}

// Request is what a signature covers. Path is the path as it goes on the
// wire (already percent-encoded, "/" when empty); Query the raw query
// without "?"; Header the headers that will be sent (Host comes from
// Host, never from Header); PayloadHash the hex SHA-256 of the body.
type Request struct {
	Method      string
	Host        string
	Path        string
	Query       string
	Header      http.Header
	PayloadHash string
}

// Scope is what a signature is good for: one region and one service on
// one day.
type Scope struct {
	Date    string // YYYYMMDD
	Region  string
	Service string
}

// String is the credential scope as it appears in the string to sign.
func (s Scope) String() string {
	return s.Date + "/" + s.Region + "/" + s.Service + "/aws4_request"
}

// ignored headers are never signed: they are changed on the way by
// proxies and clients (the same set AWS's own SDKs leave out).
var ignored = map[string]bool{
	"authorization":     true,
	"user-agent":        true,
	"x-amzn-trace-id":   true,
	"expect":            true,
	"transfer-encoding": true,
	"connection":        true,
}

// PayloadHash is the hex SHA-256 of body.
func PayloadHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// Sign signs r for region and service at now, setting X-Amz-Date,
// X-Amz-Security-Token (when c carries a session token) and Authorization
// on r.Header. Every header already in r.Header is signed, except the few
// that proxies change.
func Sign(r Request, c Credentials, region, service string, now time.Time) {
	sign(r, c, region, service, now, nil)
}

// SignOnly is Sign covering only host, X-Amz-Date, X-Amz-Security-Token
// and those of names (canonical or lower case) r.Header carries: headers
// set or changed after signing (an Accept, a traceparent) then do not
// break the signature.
func SignOnly(r Request, c Credentials, region, service string, now time.Time, names ...string) {
	only := []string{"host", "x-amz-date"}
	if c.SessionToken != "" {
		only = append(only, "x-amz-security-token")
	}
	for _, n := range names {
		if ln := strings.ToLower(n); r.Header.Get(n) != "" && !ignored[ln] && ln != "host" && ln != "x-amz-date" && ln != "x-amz-security-token" {
			only = append(only, ln)
		}
	}
	sign(r, c, region, service, now, only)
}

func sign(r Request, c Credentials, region, service string, now time.Time, only []string) {
	now = now.UTC()
	r.Header.Set("X-Amz-Date", now.Format(TimeFormat))
	if c.SessionToken != "" {
		r.Header.Set("X-Amz-Security-Token", c.SessionToken)
	}
	r.Header.Del("Authorization")
	scope := Scope{Date: now.Format(DateFormat), Region: region, Service: service}
	signed, canonical := CanonicalRequest(r, only)
	sig := Signature(c.SecretAccessKey, scope, now.Format(TimeFormat), canonical)
	r.Header.Set("Authorization", Algorithm+" Credential="+c.AccessKeyID+"/"+scope.String()+
		", SignedHeaders="+signed+", Signature="+sig)
}

// CanonicalRequest builds the canonical request of r, signing the headers
// named in only (lower case) or, when only is nil, every header r carries
// but the ignored ones. It returns the signed-headers list and the
// canonical request.
func CanonicalRequest(r Request, only []string) (signedHeaders, canonical string) {
	names := only
	if names == nil {
		names = make([]string, 0, len(r.Header)+1)
		names = append(names, "host")
		for k := range r.Header {
			lk := strings.ToLower(k)
			if ignored[lk] || lk == "host" {
				continue
			}
			names = append(names, lk)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.Grow(256 + len(r.Path) + len(r.Query))
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(canonicalPath(r.Path))
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(r.Query))
	b.WriteByte('\n')
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte(':')
		if n == "host" {
			b.WriteString(strings.TrimSpace(r.Host))
		} else {
			for i, v := range r.Header.Values(n) {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(trimValue(v))
			}
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	signedHeaders = strings.Join(names, ";")
	b.WriteString(signedHeaders)
	b.WriteByte('\n')
	b.WriteString(r.PayloadHash)
	return signedHeaders, b.String()
}

// Signature is the hex signature of a canonical request, made at amzDate
// (X-Amz-Date) within scope with secret.
func Signature(secret string, scope Scope, amzDate, canonical string) string {
	return hex.EncodeToString(hmacSHA256(SigningKey(secret, scope), []byte(StringToSign(scope, amzDate, canonical))))
}

// StringToSign is the string AWS signs: the algorithm, the time, the
// scope and the hash of the canonical request.
func StringToSign(scope Scope, amzDate, canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return Algorithm + "\n" + amzDate + "\n" + scope.String() + "\n" + hex.EncodeToString(sum[:])
}

// SigningKey derives the key for one scope from the secret access key.
func SigningKey(secret string, scope Scope) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), []byte(scope.Date))
	k = hmacSHA256(k, []byte(scope.Region))
	k = hmacSHA256(k, []byte(scope.Service))
	return hmacSHA256(k, []byte("aws4_request"))
}

func hmacSHA256(key, data []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(data)
	return h.Sum(nil)
}

// trimValue trims a header value and folds runs of spaces into one, as
// the canonical form asks.
func trimValue(v string) string {
	v = strings.TrimSpace(v)
	if !strings.Contains(v, "  ") {
		return v
	}
	var b strings.Builder
	space := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		b.WriteByte(c)
	}
	return b.String()
}

// canonicalPath encodes the wire path once more: every AWS service but S3
// signs the path URI-encoded twice, so a "%3A" on the wire is "%253A"
// here.
func canonicalPath(p string) string {
	if p == "" {
		return "/"
	}
	return uriEncode(p, false)
}

// canonicalQuery sorts the query's parameters by name and encodes names
// and values by the SigV4 rules.
func canonicalQuery(q string) string {
	if q == "" {
		return ""
	}
	parts := strings.Split(q, "&")
	pairs := make([]string, 0, len(parts))
	for _, p := range parts {
		if p == "" {
			continue
		}
		k, v, _ := strings.Cut(p, "=")
		pairs = append(pairs, uriEncode(unescape(k), true)+"="+uriEncode(unescape(v), true))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

// uriEncode percent-encodes every byte but the unreserved ones (and "/"
// unless encodeSlash), in upper-case hex.
func uriEncode(s string, encodeSlash bool) string {
	const hexdig = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexdig[c>>4])
			b.WriteByte(hexdig[c&15])
		}
	}
	return b.String()
}

// unescape undoes percent-encoding (and "+" as a space) in a query part;
// a malformed escape is kept as it is.
func unescape(s string) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '+':
			b = append(b, ' ')
		case c == '%' && i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]):
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
