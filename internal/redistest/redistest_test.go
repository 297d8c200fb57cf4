package redistest

import (
	"os"
	"strings"
	"testing"
)

// On the shared Redis a test's keys are gone once it ends.
func TestPrefix_KeysDeletedAfterTest(t *testing.T) {
	url := strings.TrimSpace(os.Getenv(EnvURL))
	if url == "" {
		url = Start(t).URL()
		t.Setenv(EnvURL, url)
	}
	c := Client(t, url)
	var prefix string
	t.Run("writer [a*b]", func(t *testing.T) {
		prefix = Prefix(t)
		for _, k := range []string{"one", "two:three"} {
			if err := c.Set(t.Context(), prefix+k, "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	})
	n, err := c.Exists(t.Context(), prefix+"one", prefix+"two:three").Result()
	if err != nil || n != 0 {
		t.Errorf("%d keys under %q left behind (%v)", n, prefix, err)
	}
}
