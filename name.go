package fusebox

import "fmt"

// MaxNameLen is the longest circuit name.
const MaxNameLen = 64

// ValidateName reports whether name can name a circuit: 1 to 64 characters
// from [A-Za-z0-9._-], and not "." or "..". Names are used as file names as
// they are, so a person can find a circuit's files with ls.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("circuit name is empty")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("circuit name %.20q... is %d characters long (at most %d)", name, len(name), MaxNameLen)
	}
	if name == "." || name == ".." {
		return fmt.Errorf("circuit name %q is not allowed", name)
	}
	for i := 0; i < len(name); i++ {
		if !nameByte[name[i]] {
			return fmt.Errorf("circuit name %q has %q at byte %d: use only letters, digits, '.', '_' and '-'", name, name[i:i+1], i)
		}
	}
	return nil
}

// nameByte holds the bytes a name may have: one lookup a byte, as every call
// checks its name.
var nameByte = func() (ok [256]bool) {
	for c := range 256 {
		ok[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	return ok
}()
