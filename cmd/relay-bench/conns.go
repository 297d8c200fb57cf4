package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// heldStreams opens n connections to t at once and starts a stream on each
// that the mock stalls after its first event (X-Mock-Fault: stall-1), waits
// until every one has had that event, and returns how much the resident
// memory of process pid grew per open stream: for a gateway, one caller
// connection and one upstream connection with what serves them. Then it
// closes them all.
func heldStreams(ctx context.Context, t target, pid, n int) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{}).DialContext,
		MaxIdleConnsPerHost: n,
		DisableCompression:  true,
	}}
	defer client.CloseIdleConnections()
	before, err := procStatusKB(pid, "VmRSS:")
	if err != nil {
		return 0, err
	}
	model := t.model
	if model == benchModel {
		model = stallModel // through Relay: see stallModel
	}
	body := requestBody(stream, model)
	var wg sync.WaitGroup
	started := make(chan error, n)
	for range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
			if err != nil {
				started <- err
				return
			}
			req.Header.Set("Authorization", t.auth)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Mock-Fault", "stall-1")
			resp, err := client.Do(req)
			if err != nil {
				started <- err
				return
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					started <- fmt.Errorf("stream ended before its first event: %w", err)
					return
				}
				if line == "\n" || line == "\r\n" {
					break
				}
			}
			started <- nil
			<-ctx.Done() // hold the stream open until every one is measured
		})
	}
	var firstErr error
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for range n {
		select {
		case err := <-started:
			if err != nil && firstErr == nil {
				firstErr = err
			}
		case <-timeout.C:
			firstErr = fmt.Errorf("%s: streams not all started within 30s", t.name)
		}
		if firstErr != nil {
			break
		}
	}
	var after int64
	if firstErr == nil {
		after, firstErr = procStatusKB(pid, "VmRSS:")
	}
	cancel()
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return (after - before) / int64(n), nil
}
