package mockupstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awses "github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The Bedrock face: bedrock-runtime's Converse, ConverseStream, InvokeModel
// and InvokeModelWithResponseStream under /model/{modelId}/…, every request
// checked for a SigV4 signature the way AWS checks it (access key, session
// token, date within five minutes, scope date, region, service, then the
// signature over method, path, query, signed headers and body hash), errors
// as Bedrock's restJson bodies ({"message"} with the type in
// x-amzn-ErrorType), streams in AWS event-stream framing with both CRCs.
// The signer and the framing are aws-sdk-go-v2's own, so the face agrees
// with AWS's SDKs by construction and shares no code with Relay.

// AWSCredential is an access key the Bedrock face accepts.
type AWSCredential struct {
	AccessKeyID, SecretAccessKey string
	// SessionToken, when set, must come as X-Amz-Security-Token.
	SessionToken string
}

// DefaultAWSRegion is the region the Bedrock face is in when
// Options.AWSRegion is empty.
const DefaultAWSRegion = "us-east-1"

// Shapes of Bedrock requests, in Request.Shape.
const (
	ShapeBedrockConverse = "bedrock_converse"
	ShapeBedrockInvoke   = "bedrock_invoke" // an Anthropic Messages body on InvokeModel
)

// bedrockClockSkew is how far X-Amz-Date may be from the server's clock.
const bedrockClockSkew = 5 * time.Minute

const eventStreamContentType = "application/vnd.amazon.eventstream"

// routeBedrock recognises POST /model/{modelId}/{operation}; the model id
// is one escaped path segment (ARNs carry "/" as %2F).
func (c *call) routeBedrock(raw string) bool {
	rest, ok := strings.CutPrefix(raw, "/model/")
	if !ok {
		return false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return false
	}
	id, op := rest[:i], rest[i+1:]
	model, err := unescapeSegment(id)
	if err != nil {
		return false
	}
	c.prov, c.model = provBedrock, model
	switch op {
	case "converse":
		c.ep = epConverse
	case "converse-stream":
		c.ep, c.stream = epConverse, true
	case "invoke":
		c.ep = epInvoke
	case "invoke-with-response-stream":
		c.ep, c.stream = epInvoke, true
	default:
		c.ep = epUnknown
	}
	if c.ep == epInvoke && bedrockEmbedFamily(model) != "" {
		c.ep = epBedrockEmbed
	}
	return true
}

func unescapeSegment(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	r, err := http.NewRequest(http.MethodGet, "http://x/"+s, nil)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(r.URL.Path, "/"), nil
}

// bedrockError is a Bedrock error: its type (x-amzn-ErrorType), status
// and message.
type bedrockError struct {
	typ     string
	status  int
	message string
}

// bedrockErrorOf is the Bedrock error an apiError stands for.
func bedrockErrorOf(e *apiError) bedrockError {
	be := bedrockError{message: e.msg}
	switch e.kind {
	case errAuth:
		be.typ, be.status = "UnrecognizedClientException", 403
	case errPermission, errBilling:
		be.typ, be.status = "AccessDeniedException", 403
	case errNotFound:
		be.typ, be.status = "ResourceNotFoundException", 404
	case errRateLimit, errQuota:
		be.typ, be.status = "ThrottlingException", 429
	case errUnavailable, errOverloaded:
		be.typ, be.status = "ServiceUnavailableException", 503
	case errTimeout:
		be.typ, be.status = "ModelTimeoutException", 408
	case errServer:
		be.typ, be.status = "InternalServerException", 500
	case errTooLarge:
		be.typ, be.status = "ValidationException", 413
	default:
		be.typ, be.status = "ValidationException", 400
	}
	if e.status != 0 {
		be.status = e.status
	}
	if e.code != "" {
		be.typ = e.code // set by the SigV4 checks: InvalidSignatureException …
	}
	if be.message == "" {
		be.message = map[string]string{
			"UnrecognizedClientException": "The security token included in the request is invalid.",
			"AccessDeniedException":       "You don't have access to the model with the specified model ID.",
			"ResourceNotFoundException":   "The provided model identifier is invalid.",
			"ThrottlingException":         "Too many requests, please wait before trying again.",
			"ServiceUnavailableException": "Bedrock is unable to process your request.",
			"ModelTimeoutException":       "Model has timed out in processing the request. Try your request again.",
			"InternalServerException":     "The system encountered an unexpected error during processing. Try your request again.",
		}[be.typ]
	}
	if be.message == "" {
		be.message = "The request is invalid."
	}
	return be
}

// failBedrock answers e as Bedrock does.
func (c *call) failBedrock(e *apiError) {
	be := bedrockErrorOf(e)
	h := c.w.Header()
	h["X-Amzn-Errortype"] = []string{be.typ + ":http://internal.amazon.com/coral/com.amazon.bedrock/"}
	c.encode("", map[string]string{"message": be.message})
	c.writeHeader(be.status, "application/json", c.buf.Len())
	c.write(c.buf.Bytes())
}

func (c *call) bedrockHeaders(h http.Header) {
	if c.requestID == "" {
		c.requestID = bedrockRequestID()
	}
	h["X-Amzn-Requestid"] = []string{c.requestID}
}

func sigErr(typ, msg string) *apiError {
	return &apiError{status: http.StatusForbidden, kind: errAuth, code: typ, msg: msg}
}

const sigMismatch = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."

// authenticateBedrock checks the request's SigV4 signature.
func (c *call) authenticateBedrock() *apiError {
	r := c.r
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return sigErr("MissingAuthenticationTokenException", "Missing Authentication Token")
	}
	a, ok := parseSigV4(auth)
	if !ok {
		return sigErr("IncompleteSignatureException", "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters. Authorization="+strings.SplitN(auth, " ", 2)[0])
	}
	cred, known := c.s.awsKeys[a.keyID]
	if !known || cred.SessionToken != r.Header.Get("X-Amz-Security-Token") {
		return sigErr("UnrecognizedClientException", "The security token included in the request is invalid.")
	}
	amzDate := r.Header.Get("X-Amz-Date")
	at, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil {
		return sigErr("IncompleteSignatureException", "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
	}
	now := time.Now().UTC()
	if c.s.opts.AWSClock != nil {
		now = c.s.opts.AWSClock().UTC()
	}
	switch {
	case at.Before(now.Add(-bedrockClockSkew)):
		return sigErr("InvalidSignatureException", "Signature expired: "+amzDate+" is now earlier than "+now.Add(-bedrockClockSkew).Format("20060102T150405Z")+" ("+now.Format("20060102T150405Z")+" - 5 min.)")
	case at.After(now.Add(bedrockClockSkew)):
		return sigErr("InvalidSignatureException", "Signature not yet current: "+amzDate+" is still later than "+now.Add(bedrockClockSkew).Format("20060102T150405Z")+" ("+now.Format("20060102T150405Z")+" + 5 min.)")
	case a.date != at.Format("20060102"):
		return sigErr("InvalidSignatureException", "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '"+a.date+"' != '"+at.Format("20060102")+"', from '"+amzDate+"'.")
	case a.region != c.s.awsRegion():
		return sigErr("InvalidSignatureException", "Credential should be scoped to a valid region. ")
	case a.service != "bedrock":
		return sigErr("InvalidSignatureException", "Credential should be scoped to correct service: 'bedrock'. ")
	}
	if want := c.expectedSignature(a, cred, at); want == "" || want != a.signature {
		return sigErr("InvalidSignatureException", sigMismatch)
	}
	return nil
}

type sigV4Auth struct {
	keyID, date, region, service, signature string
	signed                                  []string
}

func parseSigV4(v string) (sigV4Auth, bool) {
	var a sigV4Auth
	rest, ok := strings.CutPrefix(v, "AWS4-HMAC-SHA256 ")
	if !ok {
		return a, false
	}
	for _, part := range strings.Split(rest, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			f := strings.Split(val, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return a, false
			}
			a.keyID, a.date, a.region, a.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			a.signed = strings.Split(val, ";")
		case "Signature":
			a.signature = val
		}
	}
	return a, a.keyID != "" && a.signature != "" && len(a.signed) > 0
}

// expectedSignature signs, with aws-sdk-go-v2's signer, the request as it
// arrived — the headers the client signed, the body as received — and
// returns the signature it makes.
func (c *call) expectedSignature(a sigV4Auth, cred AWSCredential, at time.Time) string {
	r := c.r
	body := c.body.Bytes()
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if claimed := r.Header.Get("X-Amz-Content-Sha256"); claimed != "" && claimed != hash {
		return "" // the body is not the one the signature says
	}
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	req, err := http.NewRequestWithContext(context.Background(), r.Method, u.String(), nil)
	if err != nil {
		return ""
	}
	req.URL.Path, req.URL.RawPath = r.URL.Path, r.URL.RawPath
	req.Host = r.Host
	for _, name := range a.signed {
		switch name {
		case "host", "x-amz-date", "x-amz-security-token", "authorization":
		case "content-length":
			req.ContentLength = int64(len(body))
		default:
			if vs := r.Header.Values(name); len(vs) > 0 {
				req.Header[http.CanonicalHeaderKey(name)] = vs
			}
		}
	}
	err = v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: cred.AccessKeyID, SecretAccessKey: cred.SecretAccessKey, SessionToken: cred.SessionToken},
		req, hash, a.service, a.region, at)
	if err != nil {
		return ""
	}
	_, sig, _ := strings.Cut(req.Header.Get("Authorization"), "Signature=")
	return sig
}

func (s *Server) awsRegion() string {
	if s.opts.AWSRegion != "" {
		return s.opts.AWSRegion
	}
	return DefaultAWSRegion
}

// eventMessage frames one event-stream message: an event of type kind
// with a JSON payload, or (exception true) an exception of type kind.
func eventMessage(dst *bytes.Buffer, kind string, payload []byte, exception bool) {
	var hs awses.Headers
	if exception {
		hs.Set(":message-type", awses.StringValue("exception"))
		hs.Set(":exception-type", awses.StringValue(kind))
	} else {
		hs.Set(":message-type", awses.StringValue("event"))
		hs.Set(":event-type", awses.StringValue(kind))
	}
	hs.Set(":content-type", awses.StringValue("application/json"))
	// Only well-formed messages are encoded; this cannot fail.
	if err := awses.NewEncoder().Encode(dst, awses.Message{Headers: hs, Payload: payload}); err != nil {
		panic("mockupstream: encode event-stream message: " + err.Error())
	}
}

// padding is the "p" member Bedrock adds to stream payloads so their
// length says nothing of their content.
func padding(n int) string { return "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0"[:n%50+1] }
