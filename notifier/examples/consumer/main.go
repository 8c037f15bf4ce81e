// Command consumer is the smallest useful consumer of Crowsnest's events:
// it prints every new critical finding. Run it with the reader user:
//
//	go run ./examples/consumer nats://nats:4222 reader "$(cat reader-password)"
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	eventsv1 "github.com/crowsnest-dev/crowsnest/api/events/v1"
)

func main() {
	nc, err := nats.Connect(os.Args[1], nats.UserInfo(os.Args[2], os.Args[3]))
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	cons, err := js.CreateOrUpdateConsumer(ctx, eventsv1.StreamName, jetstream.ConsumerConfig{
		Durable: "my-tool", FilterSubject: eventsv1.SubjectFindingsChanged, AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		log.Fatal(err)
	}
	_, err = cons.Consume(func(m jetstream.Msg) {
		ev, err := eventsv1.Parse(m.Subject(), m.Data(), time.Now(), eventsv1.DefaultMaxSkew)
		var p eventsv1.FindingsChanged
		if err == nil && ev.Decode(&p) == nil {
			for _, f := range p.New {
				if f.Severity == "critical" {
					fmt.Printf("%s %s in %s %s (%s)\n", p.Image, f.ID, f.Package.Name, f.Package.Version, p.Cause)
				}
			}
		}
		_ = m.Ack()
	})
	if err != nil {
		log.Fatal(err)
	}
	select {}
}
