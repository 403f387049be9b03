package initspawn

// sysMemfdCreate is memfd_create's number (the syscall package has none
// on amd64).
const sysMemfdCreate = 319
