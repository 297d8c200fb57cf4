package configfile_test

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/relay-llm/relay/internal/configfile"
	"github.com/relay-llm/relay/internal/configfile/configfiletest"
	"github.com/relay-llm/relay/openapi/models"
)

// BenchmarkApply_Large measures apply on a 5,000-object catalog: 1,000 hosts,
// 2,000 models, 2,000 bindings. It is a measurement, not part of `make
// test`: run it with -bench Apply_Large (and RELAY_CONFIGFILE_PARALLEL
// to change the API calls at once, 4 by default). It logs wall times.
func BenchmarkApply_Large(bb *testing.B) {
	t := testing.TB(bb)
	parallel, _ := strconv.Atoi(os.Getenv("RELAY_CONFIGFILE_PARALLEL"))
	srv := configfiletest.New(t)

	b := largeCatalog()
	start := time.Now()
	docs, err := configfile.Parse("large.yaml", b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	parse := time.Since(start)
	opts := configfile.Options{Parallel: parallel}

	start = time.Now()
	p, err := configfile.NewPlan(t.Context(), srv.Client, docs, opts)
	if err != nil {
		t.Fatal(err)
	}
	plan1 := time.Since(start)
	start = time.Now()
	res, err := p.Apply(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	apply1 := time.Since(start)
	if res.Created != 5000 {
		t.Fatalf("created %d", res.Created)
	}

	audit := srv.AuditRows(t)
	start = time.Now()
	p, err = configfile.NewPlan(t.Context(), srv.Client, docs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(t.Context()); err != nil {
		t.Fatal(err)
	}
	second := time.Since(start)
	if !p.Empty() || srv.AuditRows(t) != audit {
		t.Fatalf("the second apply changed something")
	}

	start = time.Now()
	var out bytes.Buffer
	if _, err := configfile.Export(t.Context(), srv.Client, &out, parallel); err != nil {
		t.Fatal(err)
	}
	export := time.Since(start)

	t.Logf("5,000 objects (parallel %d): parse %s; first apply %s (plan %s + writes %s, %.0f objects/s); second apply (no-op) %s; export %s (%d KiB)",
		cmp.Or(parallel, 4), parse.Round(time.Millisecond), (plan1 + apply1).Round(time.Millisecond), plan1.Round(time.Millisecond),
		apply1.Round(time.Millisecond), 5000/apply1.Seconds(), second.Round(time.Millisecond), export.Round(time.Millisecond), out.Len()/1024)
}

// largeCatalog is the 5,000 objects of the apply benchmarks.
func largeCatalog() *bytes.Buffer {
	var b bytes.Buffer
	for i := range 1000 {
		fmt.Fprintf(&b, "---\nkind: Host\nspec: {slug: host-%04d, provider: custom, base_url: 'http://10.0.%d.%d:8000/v1'}\n", i, i/250, i%250)
	}
	for i := range 2000 {
		fmt.Fprintf(&b, "---\nkind: Model\nspec: {name: model-%04d, provider: meta, context_window: 131072}\n", i)
	}
	for i := range 2000 {
		fmt.Fprintf(&b, "---\nkind: Binding\nspec: {model: model-%04d, host: host-%04d, shape: openai, upstream_model: m-%d, input_price: %d, output_price: %d}\n",
			i, i%1000, i, 100000+i, 200000+i)
	}
	return &b
}

// BenchmarkApplyConfig_Large measures the atomic apply (POST /api/apply, what
// `relay apply` calls) on the same 5,000 objects: plan and creates in one
// transaction, each create through the control API's own operation in
// process. Run it with -bench ApplyConfig_Large.
func BenchmarkApplyConfig_Large(bb *testing.B) {
	t := testing.TB(bb)
	srv := configfiletest.New(t)
	body := models.ApplyRequest{Files: []models.ApplyFile{{Name: "large.yaml", Content: largeCatalog().String()}}}
	start := time.Now()
	r, err := srv.Client.ApplyConfigWithResponse(t.Context(), body)
	if err != nil || r.JSON200 == nil || r.JSON200.Created != 5000 {
		t.Fatalf("apply: %v %s", err, r.Body)
	}
	first := time.Since(start)
	start = time.Now()
	r, err = srv.Client.ApplyConfigWithResponse(t.Context(), body)
	if err != nil || r.JSON200 == nil || r.JSON200.Plan != "no changes\n" {
		t.Fatalf("second apply: %v %s", err, r.Body)
	}
	second := time.Since(start)
	t.Logf("5,000 objects, one transaction: first apply %s (%.0f objects/s); second apply (no-op) %s",
		first.Round(time.Millisecond), 5000/first.Seconds(), second.Round(time.Millisecond))
}
