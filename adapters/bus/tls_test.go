package bus_test

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/rs/zerolog"

	"github.com/hermes-go/hermes/actors/node"
	"github.com/hermes-go/hermes/adapters/bus"
	"github.com/hermes-go/hermes/adapters/bus/bustest"
)

// TestNATSOverTLS: with nats-server requiring TLS and a client certificate
// of the cluster CA (gateway.bus_tls), a bus holding one carries messages;
// one without a certificate, or with another CA's, delivers nothing.
func TestNATSOverTLS(t *testing.T) {
	certs, rogue := t.TempDir(), t.TempDir()
	if err := node.MakeCerts(certs, []string{"nats=127.0.0.1", "gw"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := node.MakeCerts(rogue, []string{"gw"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	srv := bustest.StartNATSTLS(t, certs)
	if !strings.HasPrefix(srv.URL, "tls://") {
		t.Fatalf("URL %s", srv.URL)
	}
	good, err := node.TLSFiles{CA: filepath.Join(certs, "ca.pem"), Cert: filepath.Join(certs, "gw.pem"), Key: filepath.Join(certs, "gw-key.pem")}.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	b, err := bus.OpenWith(srv.URL, good, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const topic = "gateway_test_tls"
	ch, err := b.Subscriber.Subscribe(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, b, topic, 1)
	m, n := next(t, ch, 10*time.Second)
	if n != 1 {
		t.Fatalf("over TLS: %d messages", n)
	}
	m.Ack()

	// Without the cluster's certificate nothing is carried: a publish
	// fails within its timeout.
	other, err := node.TLSFiles{CA: filepath.Join(certs, "ca.pem"), Cert: filepath.Join(rogue, "gw.pem"), Key: filepath.Join(rogue, "gw-key.pem")}.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	noCert, err := node.TLSFiles{CA: filepath.Join(certs, "ca.pem")}.ClientTLS()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]*tls.Config{"no certificate": noCert, "another CA's certificate": other} {
		bad, err := bus.OpenWith(srv.URL, tc, zerolog.Nop())
		if err != nil {
			continue // refused at once: as good as it gets
		}
		done := make(chan error, 1)
		go func() {
			done <- bad.Publisher.Publish(topic, message.NewMessage("m-"+name, []byte("should not arrive")))
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("%s: a publish went through", name)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: a publish neither failed nor went through in 60 s", name)
		}
		_ = bad.Close()
	}
	if _, n := next(t, ch, 2*time.Second); n != 0 {
		t.Fatalf("%d messages arrived from clients without the cluster's certificate", n)
	}
}
