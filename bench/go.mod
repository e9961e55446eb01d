module github.com/fusebox-hq/fusebox/bench

go 1.26.8

require github.com/fusebox-hq/fusebox v0.0.0

require (
	github.com/goccy/go-yaml v1.19.2 // indirect
	github.com/itchyny/gojq v0.12.20 // indirect
	github.com/itchyny/timefmt-go v0.1.9 // indirect
	golang.org/x/sync v0.24.0 // indirect
)

require (
	github.com/sony/gobreaker/v2 v2.4.0
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/fusebox-hq/fusebox => ../
