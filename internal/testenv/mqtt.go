package testenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
)

// MQTTSubscriber is a client of a broker that keeps every message it
// hears, by topic, for a test to wait on.
type MQTTSubscriber struct {
	Client *paho.Client

	mu   sync.Mutex
	msgs map[string][]*paho.Publish
	next map[string]int // by topic: the first message Wait has not passed yet
	got  chan struct{}
}

// Subscribe connects to the broker at addr and subscribes to filter. It
// disconnects when the test ends.
func Subscribe(t testing.TB, addr, filter string) *MQTTSubscriber {
	t.Helper()
	s := &MQTTSubscriber{msgs: map[string][]*paho.Publish{}, next: map[string]int{}, got: make(chan struct{}, 1)}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	// PacketTimeout: the caller's context is the only bound on a publish.
	// Paho's own default of 10 s cut a 30 MB publish short under the race
	// detector on a loaded machine, whatever the test allowed it.
	s.Client = paho.NewClient(paho.ClientConfig{Conn: conn, OnClientError: func(error) {}, PacketTimeout: time.Hour,
		OnPublishReceived: []func(paho.PublishReceived) (bool, error){
			func(r paho.PublishReceived) (bool, error) {
				s.mu.Lock()
				s.msgs[r.Packet.Topic] = append(s.msgs[r.Packet.Topic], r.Packet)
				s.mu.Unlock()
				select {
				case s.got <- struct{}{}:
				default:
				}
				return true, nil
			},
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Client.Connect(ctx, &paho.Connect{ClientID: fmt.Sprintf("test-%x", rand.Uint64()), CleanStart: true, KeepAlive: 30}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Client.Disconnect(&paho.Disconnect{}) })
	if _, err := s.Client.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// Wait returns the next message of topic whose payload is want ("" for
// any), passing it: a later Wait looks only at what came after.
func (s *MQTTSubscriber) Wait(t testing.TB, topic, want string) *paho.Publish {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		s.mu.Lock()
		for i := s.next[topic]; i < len(s.msgs[topic]); i++ {
			if m := s.msgs[topic][i]; want == "" || string(m.Payload) == want {
				s.next[topic] = i + 1
				s.mu.Unlock()
				return m
			}
		}
		s.mu.Unlock()
		select {
		case <-s.got:
		case <-timeout:
			t.Fatalf("no message %q on %s in 20s", want, topic)
		}
	}
}

// Payloads returns the payloads of every message of topic heard so far.
func (s *MQTTSubscriber) Payloads(topic string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.msgs[topic] {
		out = append(out, string(m.Payload))
	}
	return out
}

// Retained returns what the broker at addr retains at topic, "" for
// nothing: it subscribes to topic and to a marker it then publishes, which
// the broker delivers after any retained message of the subscription.
func Retained(t testing.TB, addr, topic string) string {
	t.Helper()
	marker := fmt.Sprintf("test/marker/%x", rand.Uint64())
	s := Subscribe(t, addr, topic)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Client.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: marker, QoS: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.Publish(ctx, &paho.Publish{Topic: marker, Payload: []byte("x"), QoS: 1}); err != nil {
		t.Fatal(err)
	}
	s.Wait(t, marker, "x")
	if p := s.Payloads(topic); len(p) > 0 {
		return p[0]
	}
	return ""
}
