package main

import (
	"strings"
	"testing"
)

// TestSummary_ListsSkipsAndCounts: a stream with a pass, a failure and a
// skip prints the package lines and the failure's output, lists the skip
// with its message, and closes with the counts.
func TestSummary_ListsSkipsAndCounts(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"start","Package":"example.com/a"}`,
		`{"Action":"run","Package":"example.com/a","Test":"TestOK"}`,
		`{"Action":"output","Package":"example.com/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Action":"output","Package":"example.com/a","Test":"TestOK","Output":"    a_test.go:5: quiet when it passes\n"}`,
		`{"Action":"pass","Package":"example.com/a","Test":"TestOK"}`,
		`{"Action":"output","Package":"example.com/a","Test":"TestBad","Output":"    a_test.go:9: boom\n"}`,
		`{"Action":"fail","Package":"example.com/a","Test":"TestBad"}`,
		`{"Action":"output","Package":"example.com/a","Test":"TestNode","Output":"--- SKIP: TestNode (0.00s)\n"}`,
		`{"Action":"output","Package":"example.com/a","Test":"TestNode","Output":"    c_test.go:3: SKIPPING: node is not on PATH\n"}`,
		`{"Action":"skip","Package":"example.com/a","Test":"TestNode"}`,
		`{"Action":"output","Package":"example.com/a","Output":"FAIL\n"}`,
		`{"Action":"output","Package":"example.com/a","Output":"FAIL\texample.com/a\t0.1s\n"}`,
		`{"Action":"fail","Package":"example.com/a"}`,
		`not json: passed through`,
	}, "\n")
	var out strings.Builder
	s := newSummary(&out)
	if err := s.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	s.finish()
	got := out.String()
	for _, want := range []string{"a_test.go:9: boom", "FAIL\texample.com/a\t0.1s", "not json: passed through",
		"example.com/a TestNode: c_test.go:3: SKIPPING: node is not on PATH", "\n1 passed, 1 failed, 1 skipped\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "quiet when it passes") || strings.Contains(got, "=== RUN") {
		t.Errorf("a passing test's output was printed:\n%s", got)
	}
}

// TestSummary_ShowsTestsThatNeverEnded: a package that fails while a test is
// still running (the binary hit -timeout) shows what that test logged and
// counts it as failed.
func TestSummary_ShowsTestsThatNeverEnded(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"run","Package":"example.com/h","Test":"TestHangs"}`,
		`{"Action":"output","Package":"example.com/h","Test":"TestHangs","Output":"    h_test.go:7: waiting for the stream\n"}`,
		`{"Action":"output","Package":"example.com/h","Output":"panic: test timed out after 25m0s\n"}`,
		`{"Action":"output","Package":"example.com/h","Output":"FAIL\texample.com/h\t1500.0s\n"}`,
		`{"Action":"fail","Package":"example.com/h"}`,
	}, "\n")
	var out strings.Builder
	s := newSummary(&out)
	if err := s.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	s.finish()
	got := out.String()
	for _, want := range []string{"panic: test timed out", "DID NOT END: TestHangs", "h_test.go:7: waiting for the stream", "\n0 passed, 1 failed, 0 skipped\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
