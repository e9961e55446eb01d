// Command racy has one data race: two goroutines increment n unsynchronised.
// race_test.go runs it, built with -race, through the harness.
package main

import "fmt"

func main() {
	n := 0
	done := make(chan bool)
	go func() { n++; done <- true }()
	n++
	<-done
	fmt.Println(n)
}
