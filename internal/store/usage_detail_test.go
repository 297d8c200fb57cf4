package store

import (
	"bytes"
	"testing"
)

const sampleDetail = `{"model":"m","strategy":"ordered","strategy_from":"default","affinity":"prompt_cache_key","session_from":"prompt_cache_key","needs":{"prompt_tokens":412,"max_output":1024},"candidates":[` +
	`{"binding_id":"f2161a45-597f-5ea5-a674-03eba2b69b7f","host":"mock","model":"m","upstream_model":"gpt-4o-mini","shape":"openai","position":0,"score":1,"keys":["good","spare","third"],"affinity":true},` +
	`{"binding_id":"0c9d2a61-1f3e-4c52-9d0a-5b7e8f1a2c3d","host":"other","model":"m","upstream_model":"gpt-4o-mini-2024-07-18","shape":"openai","position":1,"score":0.5,"keys":["one","two"],"skip":"keys_held"},` +
	`{"binding_id":"7e6f5d4c-3b2a-4190-8f7e-6d5c4b3a2910","host":"other","model":"m-small","upstream_model":"gpt-4o-mini","fallback":1,"shape":"openai","position":2,"score":0.25,"keys":["one"]}],` +
	`"chosen":{"binding_id":"f2161a45-597f-5ea5-a674-03eba2b69b7f","host":"mock","model":"m","host_key":"good","slot":2,"affinity":"miss"}}`

func TestPackDetail_RoundTripsAndIsSmall(t *testing.T) {
	z := packDetail([]byte(sampleDetail))
	got, err := unpackDetail(z)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte(sampleDetail)) {
		t.Fatalf("round trip changed the decision:\n%s", got)
	}
	// jsonb holds this decision in about 1,150 bytes; the packed form must
	// be well under half of the text.
	if len(z) > len(sampleDetail)*3/10 {
		t.Errorf("packed %d bytes of %d, want at most 30%%", len(z), len(sampleDetail))
	}
	t.Logf("packed %d of %d bytes", len(z), len(sampleDetail))
	if packDetail(nil) != nil {
		t.Error("no decision packs to something")
	}
	if d, err := unpackDetail(nil); d != nil || err != nil {
		t.Errorf("unpack(nil) = %q, %v", d, err)
	}
}

func TestUnpackDetail_RefusesWhatIsNotADecision(t *testing.T) {
	for _, z := range [][]byte{{0}, {2, 1, 2, 3}, {detailVersion, 0xff, 0xff, 0xff}, {detailVersion}} {
		if _, err := unpackDetail(z); err == nil {
			t.Errorf("unpack(%x) took it", z)
		}
	}
	// A deflate bomb stops at the bound.
	big := packDetail(bytes.Repeat([]byte("a"), maxDetail+10))
	if _, err := unpackDetail(big); err == nil {
		t.Error("a decision over the bound was taken")
	}
	e := UsageEvent{RouteDetailZ: []byte{9, 9}}
	readDetail(&e)
	if e.RouteDetail != nil || e.RouteDetailZ != nil {
		t.Errorf("a bad stored decision read as %q / %x", e.RouteDetail, e.RouteDetailZ)
	}
}

func FuzzUnpackDetail(f *testing.F) {
	f.Add(packDetail([]byte(sampleDetail)))
	f.Add([]byte{detailVersion, 1, 2, 3})
	f.Fuzz(func(t *testing.T, z []byte) {
		d, err := unpackDetail(z)
		if err != nil {
			return
		}
		if len(d) > maxDetail {
			t.Fatalf("inflated %d bytes", len(d))
		}
		again, err := unpackDetail(packDetail(d))
		if err != nil || !bytes.Equal(again, d) {
			t.Fatalf("repack of %q: %q, %v", d, again, err)
		}
	})
}
