package file

// utimeNow is UTIME_NOW of <sys/stat.h>, which golang.org/x/sys/unix does
// not define for macOS: utimensat sets the time to now, which anyone who
// may write the file may do.
const utimeNow = -1
