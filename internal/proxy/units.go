package proxy

import (
	"math"
	"strconv"

	"github.com/relay-llm/relay/internal/wire"
)

// Units a binding may bill per unit (snapshot.UnitPrice, priced by
// pricing.UnitCost in the ledger): an image endpoint's images, counted as
// asked (n, default 1, of the size and quality asked: OpenAI bills every
// image it made, and makes as many as n), and a transcription's or
// translation's seconds, as the upstream's usage reports them
// ({"type":"duration","seconds":…}, whisper-1's). Only a 2xx counts.

// imageUnits reads an image request's n, size and quality: JSON members,
// or multipart fields.
func (rq *request) imageUnits() wire.Units {
	if u := rq.form.units; u != nil {
		return *u // a spilled form's, read while its file was open
	}
	return imageUnits(rq.body.Bytes(), formBoundary(rq.r.Header.Get("Content-Type")))
}

// imageUnits reads n, size and quality from body: the multipart form's
// fields when boundary is not "", else the JSON members.
func imageUnits(body []byte, b string) wire.Units {
	var n, size, quality []byte
	if b != "" {
		field := func(name string) []byte {
			s, e, err := formPart(body, b, name)
			if err != nil || s < 0 {
				return nil
			}
			return body[s:e]
		}
		n, size, quality = field("n"), field("size"), field("quality")
	} else {
		str := func(name string) []byte {
			v, _ := wire.Get(body, name)
			s, _ := wire.Str(v)
			return s
		}
		n, _ = wire.Get(body, "n")
		size, quality = str("size"), str("quality")
	}
	u := wire.Units{Images: 1, Size: string(size), Quality: string(quality)}
	if c, err := strconv.ParseInt(string(n), 10, 64); err == nil && c > 0 {
		u.Images = c
	}
	return u
}

// audioMillis is the duration an upstream's usage object reports, in
// milliseconds; 0 when it reports tokens instead.
func audioMillis(usage []byte) int64 {
	if t, _ := wire.Get(usage, "type"); string(t) != `"duration"` {
		return 0
	}
	v, _ := wire.Get(usage, "seconds")
	s, err := strconv.ParseFloat(string(v), 64)
	if err != nil || s <= 0 || math.IsInf(s, 0) {
		return 0
	}
	return int64(math.Ceil(min(s, 1e12) * 1000))
}

// audioBytesPerSecond is how many bytes of an upload the limiter takes for
// one second of audio, to estimate a transcription's or translation's
// seconds before the upstream has counted them: 128 kbit/s, the rate of a
// typical MP3 or M4A of speech. The budgets reserve the estimate and
// settle the seconds the upstream reports (docs/rate-limits.md).
const audioBytesPerSecond = 16_000

// estimatedUnits is what the limiter reserves of the request's units
// (admission.Admission.Units): an image request's images as asked, and
// the seconds of a transcription's or translation's upload, estimated
// from its size (at least one).
func (rq *request) estimatedUnits() wire.Units {
	switch rq.in {
	case wire.InboundImages, wire.InboundImageEdits, wire.InboundImageVariations:
		return rq.imageUnits()
	case wire.InboundTranscriptions, wire.InboundTranslations:
		size := int64(rq.body.Len())
		if sp := rq.form.spilled; sp != nil {
			size = sp.Size()
		}
		return wire.Units{Millis: max(1, (size+audioBytesPerSecond-1)/audioBytesPerSecond) * 1000}
	}
	return wire.Units{}
}

// units is what the request used, by unit, once it succeeded.
func (rq *request) units() wire.Units {
	if rq.status/100 != 2 {
		return wire.Units{}
	}
	switch rq.in {
	case wire.InboundImages, wire.InboundImageEdits, wire.InboundImageVariations:
		return rq.imageUnits()
	case wire.InboundTranscriptions, wire.InboundTranslations:
		return wire.Units{Millis: rq.audioMillis}
	}
	return wire.Units{}
}
