// A pod sandbox ("pause") process for the test kubelet: it holds the pod's namespaces,
// reaps orphans (it is PID 1 of the sandbox) and exits on SIGINT/SIGTERM. No image can
// be pulled on this machine, so the sandbox image is built from this binary.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s == syscall.SIGCHLD {
			for {
				var ws syscall.WaitStatus
				pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
				if pid <= 0 || err != nil {
					break
				}
			}
			continue
		}
		os.Exit(0)
	}
}
