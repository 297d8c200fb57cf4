// Package tracing builds the OpenTelemetry tracer provider `relay serve`
// hands to the inference plane. Tracing is on only when the standard
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
// (and OTEL_SDK_DISABLED is not true, nor OTEL_TRACES_EXPORTER "none"):
// spans then go through a batch span processor to an OTLP/HTTP exporter,
// which reads the other standard OTEL_EXPORTER_OTLP_* variables (headers,
// timeout, compression, certificates) itself, as the SDK reads OTEL_BSP_*
// and OTEL_TRACES_SAMPLER*. Otherwise New returns nothing to trace with,
// and the proxy creates no span at all.
package tracing

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName is the service.name of every span Relay exports, unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise.
const ServiceName = "relay"

// Tracing is a running tracer provider and its exporter.
type Tracing struct {
	provider *sdktrace.TracerProvider
	endpoint string
}

// Enabled reports whether the environment asks for traces, and the
// variable that does.
func Enabled(getenv func(string) string) (string, bool) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return "", false
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return "", false
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if strings.TrimSpace(getenv(name)) != "" {
			return name, true
		}
	}
	return "", false
}

// New starts tracing when the environment asks for it; it returns nil,
// nil when it does not. version is the service.version.
func New(ctx context.Context, getenv func(string) string, version string) (*Tracing, error) {
	name, ok := Enabled(getenv)
	if !ok {
		return nil, nil
	}
	if v := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); v != "" && !strings.EqualFold(v, "otlp") {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: %q is not supported; Relay exports traces with otlp (or none)", v)
	}
	if p := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")); p == "" {
		if p = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL")); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: %q is not supported; Relay exports traces over http/protobuf", p)
		}
	} else if p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: %q is not supported; Relay exports traces over http/protobuf", p)
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", ServiceName),
			attribute.String("service.version", version),
		),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
	)
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracing{provider: tp, endpoint: strings.TrimSpace(getenv(name))}, nil
}

// Provider is the tracer provider to hand the proxy; nil when t is nil.
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.provider
}

// Endpoint is where spans go, for the start-up log.
func (t *Tracing) Endpoint() string {
	if t == nil {
		return ""
	}
	return t.endpoint
}

// Shutdown exports the spans still queued and stops the provider, waiting
// at most until ctx ends. A nil Tracing has nothing to do.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}
