package httpcall

// RaceBuild says the tests run under the race detector, whose jq child
// process has no address-space limit.
const RaceBuild = raceBuild
