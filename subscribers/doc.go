// Package subscribers holds hookhub's subscriber side: the library every
// subscriber is built on (subscriber), the three example services (credits,
// email, downgrade, each with its command under cmd/), and the process
// runner they share (service).
//
// Running the three in one process, as `hub dev` does, takes one
// subscriber.Subscriber per service, on one pool, one JetStream connection
// and one Prometheus registry (metrics are labelled by subscriber):
//
//	sub, _ := subscriber.New(subscriber.Config{Name: credits.Name, Migrations: credits.Migrations, Pool: pool, JetStream: js, Registerer: reg})
//	_ = credits.Register(sub, credits.Options{})
//	go sub.Run(ctx)
//
// and likewise for email (email.Register(sub, email.Options{Sender:
// email.NewSender("log", logger), Pool: pool, Registerer: reg})) and
// downgrade (downgrade.Register(sub)). TestFanOut shows it.
package subscribers
