package tracing_test

import (
	"context"
	"strings"
	"testing"

	"github.com/relay-llm/relay/internal/tracing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEnabled(t *testing.T) {
	for _, tt := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, ""},
	} {
		name, ok := tracing.Enabled(env(tt.env))
		if name != tt.want || ok != (tt.want != "") {
			t.Errorf("%v: %q %v", tt.env, name, ok)
		}
	}
}

func TestNew_OffAndBadSettings(t *testing.T) {
	tr, err := tracing.New(context.Background(), env(nil), "test")
	if tr != nil || err != nil || tr.Provider() != nil || tr.Shutdown(context.Background()) != nil {
		t.Fatalf("off: %v %v", tr, err)
	}
	for _, bad := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "zipkin"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
	} {
		_, err := tracing.New(context.Background(), env(bad), "test")
		if err == nil || !strings.HasPrefix(err.Error(), "OTEL_") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}
