package eventstream

import (
	"bytes"
	"encoding/base64"
	"io"
	"testing"
)

func TestSSEReader_OneEventPerMessage(t *testing.T) {
	var stream []byte
	stream, _ = Append(stream, bedrockEvent("messageStart", `{"role":"assistant"}`))
	stream, _ = Append(stream, bedrockEvent("contentBlockDelta", "{\"delta\":\n{\"text\":\"a\"}}"))
	stream, _ = Append(stream, Message{Headers: []Header{StringHeader(":message-type", "exception"), StringHeader(":exception-type", "throttlingException")}, Payload: []byte(`{"message":"slow down"}`)})
	got, err := io.ReadAll(NewSSEReader(&oneByte{b: stream}, false))
	if err != nil {
		t.Fatal(err)
	}
	want := "event: messageStart\ndata: {\"role\":\"assistant\"}\n\n" +
		"event: contentBlockDelta\ndata: {\"delta\":\ndata: {\"text\":\"a\"}}\n\n" +
		"event: throttlingException\ndata: {\"message\":\"slow down\"}\n\n"
	if string(got) != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

// InvokeModelWithResponseStream's chunks give back the Anthropic stream
// they carry; an exception becomes Anthropic's error event.
func TestSSEReader_UnwrapsChunks(t *testing.T) {
	inner := `{"type":"message_stop"}`
	var stream []byte
	stream, _ = Append(stream, bedrockEvent("chunk", `{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(inner))+`","p":"abc"}`))
	stream, _ = Append(stream, Message{Headers: []Header{StringHeader(":message-type", "exception"), StringHeader(":exception-type", "serviceUnavailableException")}, Payload: []byte(`{"message":"busy"}`)})
	got, err := io.ReadAll(NewSSEReader(bytes.NewReader(stream), true))
	if err != nil {
		t.Fatal(err)
	}
	want := "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n" +
		"event: error\ndata: {\"error\":{\"message\":\"busy\",\"type\":\"overloaded_error\"},\"type\":\"error\"}\n\n"
	if string(got) != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

// A corrupt message ends the stream with the decoder's error, after the
// events before it.
func TestSSEReader_CorruptMessageIsAnError(t *testing.T) {
	good, _ := Append(nil, bedrockEvent("messageStart", `{}`))
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1
	_, err := io.ReadAll(NewSSEReader(bytes.NewReader(append(good, bad...)), false))
	if err != ErrMessageCRC {
		t.Fatalf("err %v", err)
	}
}
