package simcli

// LateHistory is lateHistory, for the package's external tests.
var LateHistory = lateHistory
