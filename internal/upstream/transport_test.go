package upstream

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

func TestNewTransport_HonoursConnectTimeout(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dial := NewTransport().DialContext

	ctx := Attempt(context.Background(), time.Nanosecond, nil)
	if c, err := dial(ctx, "tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("a 1ns connect timeout let the dial through")
	} else if ne := (net.Error)(nil); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err %v is not a timeout", err)
	}
	c, err := dial(Attempt(context.Background(), time.Second, nil), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
