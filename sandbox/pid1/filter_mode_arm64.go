package pid1

// legacyModeCalls: arm64 has only the *at family.
var legacyModeCalls []modeCall
