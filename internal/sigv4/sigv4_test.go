package sigv4

import (
	"bytes"
	"context"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The credentials and clock of AWS's published SigV4 test suite.
const (
	suiteKeyID  = "AKIDEXAMPLE"
	suiteSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
)

var suiteTime = time.Date(2015, 8, 30, 12, 36, 0, 0, time.UTC)

func TestSigningKey_MatchesThePublishedDerivation(t *testing.T) {
	got := hex.EncodeToString(SigningKey(suiteSecret, Scope{Date: "20120215", Region: "us-east-1", Service: "iam"}))
	if want := "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"; got != want {
		t.Fatalf("signing key %s, want %s", got, want)
	}
}

func TestSign_MatchesTheAWSTestSuite(t *testing.T) {
	for _, tc := range []struct {
		name, path, query, want string
	}{
		{"get-vanilla", "/", "", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
		{"get-vanilla-query-order-key-case", "/", "Param2=value2&Param1=value1", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			Sign(Request{Method: "GET", Host: "example.amazonaws.com", Path: tc.path, Query: tc.query, Header: h, PayloadHash: EmptyPayloadHash},
				Credentials{AccessKeyID: suiteKeyID, SecretAccessKey: suiteSecret}, "us-east-1", "service", suiteTime)
			want := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + tc.want
			if got := h.Get("Authorization"); got != want {
				t.Fatalf("authorization\n got %s\nwant %s", got, want)
			}
			if got := h.Get("X-Amz-Date"); got != "20150830T123600Z" {
				t.Fatalf("x-amz-date %q", got)
			}
		})
	}
}

// AWS's S3 documentation signs a GET with a Range header and
// x-amz-content-sha256 (S3 encodes the path once, which for /test.txt is
// the same as twice).
func TestSign_MatchesTheS3GetObjectExample(t *testing.T) {
	h := http.Header{}
	h.Set("Range", "bytes=0-9")
	h.Set("X-Amz-Content-Sha256", EmptyPayloadHash)
	Sign(Request{Method: "GET", Host: "examplebucket.s3.amazonaws.com", Path: "/test.txt", Header: h, PayloadHash: EmptyPayloadHash},
		Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}, "us-east-1", "s3",
		time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC))
	if got := h.Get("Authorization"); !strings.HasSuffix(got, "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41") {
		t.Fatalf("authorization %s", got)
	}
}

// The SDK's signer is the judge for what Bedrock requests look like: a
// POST with a JSON body, a model id with ":" in the path, a session
// token.
func TestSign_AgreesWithTheAWSSDK(t *testing.T) {
	body := []byte(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`)
	for _, tc := range []struct{ name, path, token string }{
		{"converse", "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse", ""},
		{"session token", "/model/amazon.nova-lite-v1%3A0/converse-stream", "FwoGZXIvYXdzEJr//////////wEaDO+token/with+chars="},
		{"arn", "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude/invoke", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 3, 1, 10, 11, 12, 0, time.UTC)
			creds := Credentials{AccessKeyID: "AKIAEXAMPLE123", SecretAccessKey: "secret/with+chars", SessionToken: tc.token}
			req, err := http.NewRequest("POST", "https://bedrock-runtime.eu-west-3.amazonaws.com"+tc.path, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json")
			hash := PayloadHash(body)
			err = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, SessionToken: tc.token},
				req, hash, "bedrock", "eu-west-3", now)
			if err != nil {
				t.Fatal(err)
			}

			h := http.Header{}
			h.Set("Content-Type", "application/json")
			h.Set("Accept", "application/json")
			h.Set("Content-Length", strconv.Itoa(len(body)))
			Sign(Request{Method: "POST", Host: "bedrock-runtime.eu-west-3.amazonaws.com", Path: tc.path, Header: h, PayloadHash: hash}, creds, "eu-west-3", "bedrock", now)
			if got, want := h.Get("Authorization"), req.Header.Get("Authorization"); got != want {
				t.Fatalf("authorization\n got %s\nwant %s (sdk)", got, want)
			}
			if got, want := h.Get("X-Amz-Security-Token"), req.Header.Get("X-Amz-Security-Token"); got != want {
				t.Fatalf("security token %q, sdk %q", got, want)
			}
		})
	}
}

func TestMatches_RefusesAnyChange(t *testing.T) {
	body := []byte(`{"a":1}`)
	creds := Credentials{AccessKeyID: "AKID", SecretAccessKey: "s3cret"}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sign := func() Request {
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		r := Request{Method: "POST", Host: "bedrock-runtime.us-east-1.amazonaws.com", Path: "/model/m%3A0/converse", Header: h, PayloadHash: PayloadHash(body)}
		Sign(r, creds, "us-east-1", "bedrock", now)
		return r
	}
	check := func(r Request, secret string) bool {
		a, err := ParseAuthorization(r.Header.Get("Authorization"))
		if err != nil {
			t.Fatal(err)
		}
		return Matches(r, a, r.Header.Get("X-Amz-Date"), secret)
	}
	if !check(sign(), "s3cret") {
		t.Fatal("a fresh signature does not verify")
	}
	if check(sign(), "other") {
		t.Fatal("verified with the wrong secret")
	}
	r := sign()
	r.PayloadHash = PayloadHash([]byte(`{"a":2}`))
	if check(r, "s3cret") {
		t.Fatal("verified a changed body")
	}
	r = sign()
	r.Path = "/model/m%3A1/converse"
	if check(r, "s3cret") {
		t.Fatal("verified a changed path")
	}
	r = sign()
	r.Header.Set("Content-Type", "text/plain")
	if check(r, "s3cret") {
		t.Fatal("verified a changed signed header")
	}
	r = sign()
	r.Header.Set("User-Agent", "changed on the way")
	if !check(r, "s3cret") {
		t.Fatal("an unsigned header broke the signature")
	}
}

func TestParseAuthorization_RefusesMalformed(t *testing.T) {
	for _, v := range []string{
		"", "Bearer x", "AWS4-HMAC-SHA256 ", "AWS4-HMAC-SHA256 Credential=a/b/c/d/e, SignedHeaders=host, Signature=x",
		"AWS4-HMAC-SHA256 Credential=a/b/c/d/aws4_request, Signature=x", "AWS4-HMAC-SHA256 Credential=a/b/c/d/aws4_request, SignedHeaders=host, Signature=x, Extra=1",
	} {
		if _, err := ParseAuthorization(v); err == nil {
			t.Errorf("%q parsed", v)
		}
	}
	a, err := ParseAuthorization("AWS4-HMAC-SHA256 Credential=AK/20260101/us-west-2/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc")
	if err != nil || a.AccessKeyID != "AK" || a.Scope.Region != "us-west-2" || a.Scope.Service != "bedrock" || a.Scope.Date != "20260101" || len(a.SignedHeaders) != 2 {
		t.Fatalf("%+v %v", a, err)
	}
}

func FuzzParseAuthorization(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AK/20260101/us-west-2/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc")
	f.Add("AWS4-HMAC-SHA256 Credential=,,,")
	f.Fuzz(func(t *testing.T, v string) {
		a, err := ParseAuthorization(v)
		if err == nil && (a.AccessKeyID == "" || a.Signature == "") {
			t.Fatalf("accepted %q without a key or signature", v)
		}
	})
}

func BenchmarkSign(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 2048)
	creds := Credentials{AccessKeyID: "AKID", SecretAccessKey: "s3cret", SessionToken: "tok"}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		Sign(Request{Method: "POST", Host: "bedrock-runtime.us-east-1.amazonaws.com", Path: "/model/m%3A0/converse-stream", Header: h, PayloadHash: PayloadHash(body)}, creds, "us-east-1", "bedrock", now)
	}
}

func TestParseSecret(t *testing.T) {
	for _, tc := range []struct{ in, key, token string }{
		{"wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""},
		{`{"secret_access_key":"abc","session_token":"tok"}`, "abc", "tok"},
	} {
		k, tok, err := ParseSecret(tc.in)
		if err != nil || k != tc.key || tok != tc.token {
			t.Errorf("%q: %q %q %v", tc.in, k, tok, err)
		}
	}
	for _, bad := range []string{"", "two words", `{"session_token":"t"}`, `{"secret_access_key":`} {
		if _, _, err := ParseSecret(bad); err == nil || strings.Contains(err.Error(), bad) && bad != "" {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// SignURL signs the path as it goes on the wire: the SDK's signer agrees.
func TestSignURL_AgreesWithTheAWSSDK(t *testing.T) {
	body := []byte(`{"x":1}`)
	raw := "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2%3A1/invoke?a=b%20c"
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json") // not named: left unsigned
	if err := SignURL("POST", raw, h, body, Credentials{AccessKeyID: "AK", SecretAccessKey: "s"}, "us-east-1", "bedrock", now, "Content-Type"); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", raw, nil)
	req.Header.Set("Content-Type", "application/json")
	_ = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: "AK", SecretAccessKey: "s"}, req, PayloadHash(body), "bedrock", "us-east-1", now)
	if h.Get("Authorization") != req.Header.Get("Authorization") {
		t.Fatalf("\n%s\n%s", h.Get("Authorization"), req.Header.Get("Authorization"))
	}
}
