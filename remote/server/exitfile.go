package server

// ExitFileName is the file in the log directory where the launch wrapper
// writes "PID STATUS" when the server exits; Find reads it, and so does
// the host-side watcher that tells the cockpit when to run Find
// (probes/hostwatch).
const ExitFileName = exitFileName
