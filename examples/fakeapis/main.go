// Command fakeapis serves stand-ins for OpenWeatherMap, wttr.in, Open-Meteo
// and Home Assistant on 127.0.0.1, so the README's worked examples run as
// documented:
//
//	go run ./examples/fakeapis &
//	curl -X POST 127.0.0.1:8089/_fail/openweathermap   # make one fail
//	curl -X POST 127.0.0.1:8089/_heal/openweathermap   # and heal it
package main

import (
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/fusebox-hq/fusebox/internal/fakeapis"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8089", "listen `ADDRESS` (loopback)")
	key := flag.String("appid", "demo-key", "the OpenWeatherMap API key it accepts")
	token := flag.String("token", "demo-token", "the Home Assistant token it accepts")
	flag.Parse()
	srv := &http.Server{Addr: *addr, Handler: fakeapis.New(*key, *token), ReadHeaderTimeout: 5 * time.Second}
	log.Printf("fake OpenWeatherMap, wttr.in, Open-Meteo and Home Assistant on http://%s", *addr)
	log.Fatal(srv.ListenAndServe())
}
