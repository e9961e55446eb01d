package fusebox

// ErrNeedLock is Decide's answer when the decision must be made again under
// the store's lock (half-open, or stored times to rebase).
var ErrNeedLock = errNeedLock
