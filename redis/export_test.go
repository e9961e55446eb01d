package redis

import "time"

// Test hooks: the defaults of these are the package's constants in use.

// WithLockTimeout sets how long Exclusive waits for a busy key (default
// DefaultLockTimeout).
func WithLockTimeout(d time.Duration) Option { return func(s *Store) { s.lockTimeout = d } }

// WithLockLease sets how long Exclusive's lock lives when its holder dies
// without releasing it (default DefaultLockLease).
func WithLockLease(d time.Duration) Option { return func(s *Store) { s.lockLease = d } }

// WithMaxEvents caps each circuit's event stream, approximately (default
// DefaultMaxEvents).
func WithMaxEvents(n int) Option { return func(s *Store) { s.maxEvents = n } }
