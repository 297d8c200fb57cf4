package wire

// The route hint a caller may put in its body, metadata.relay_route, is
// Relay's own: it is read for routing and cut out of the body that goes
// upstream (Anthropic refuses unknown metadata members; Gemini has no
// metadata at all). The cut is a span of the caller's bytes, spliced out
// like the model is spliced in: nothing else is re-encoded.

// hintMember is the metadata member that carries the route hint.
const hintMember = "relay_route"

// Cut is a span of a request body that goes upstream without it. The
// zero Cut cuts nothing.
type Cut struct{ Start, End int }

// Empty reports whether c cuts nothing.
func (c Cut) Empty() bool { return c.End <= c.Start }

// AppendCut appends body without c to dst.
func AppendCut(dst, body []byte, c Cut) []byte {
	if c.Empty() {
		return append(dst, body...)
	}
	dst = append(dst, body[:c.Start]...)
	return append(dst, body[c.End:]...)
}

// scanHint reads metadata.relay_route from the metadata object whose value
// is body[ms:me]: open is the index of the root object's '{', and prevEnd
// the end of the value of the root member before metadata, or -1 when
// metadata is the first. It sets f.Hint (when the hint is a string) and
// f.HintCut: the member, and with it the whole metadata member when the
// hint was its only one. A hint that appears twice, or under a name that
// differs from relay_route only in case, is refused, as every member
// Relay decides on is.
func (f *RouteFacts) scanHint(body []byte, open, prevEnd, ms int) *Error {
	var refused *Error
	n := 0
	pe, hs, he, hpe := -1, -1, -1, -1
	_, _ = eachMember(body, ms, 2, func(key []byte, s, e int) bool {
		n++
		exact, folded := string(key) == hintMember, false
		if !exact && !plainKey(key) {
			exact, folded = matchKey(key, hintMember)
		}
		if exact || folded {
			if refused == nil {
				refused = checkMember(key, "metadata."+hintMember, folded, hs >= 0)
			}
			hs, he, hpe = s, e, pe
		}
		pe = e
		return true
	})
	if refused != nil {
		return refused
	}
	if hs < 0 {
		return nil
	}
	f.Hint, _ = Str(body[hs:he])
	if n == 1 {
		me, _ := skipValue(body, ms, 1)
		f.HintCut = memberCut(body, open, prevEnd, me)
	} else {
		f.HintCut = memberCut(body, ms, hpe, he)
	}
	return nil
}

// memberCut is the span that removes one member from the object whose '{'
// is at body[open]: the member's value ends at vend, and the value of the
// member before it at prevEnd (-1 when it is the first). A member after
// another goes with the comma before it; a first member with the comma
// after it; an only member leaves the object empty.
func memberCut(body []byte, open, prevEnd, vend int) Cut {
	if prevEnd >= 0 {
		return Cut{Start: prevEnd, End: vend}
	}
	ks := skipWS(body, open+1)
	if j := skipWS(body, vend); j < len(body) && body[j] == ',' {
		return Cut{Start: ks, End: skipWS(body, j+1)}
	}
	return Cut{Start: ks, End: vend}
}
