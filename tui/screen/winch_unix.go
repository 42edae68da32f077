//go:build unix

package screen

import (
	"os"
	"os/signal"
	"syscall"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"
)

// followSize sends a tea.WindowSizeMsg with out's size to send on every
// SIGWINCH, until the returned stop is called (it waits for the goroutine).
func followSize(out *os.File, send func(tea.Msg)) (stop func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGWINCH)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-sig:
				if w, h, err := term.GetSize(out.Fd()); err == nil {
					send(tea.WindowSizeMsg{Width: w, Height: h})
				}
			}
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
		<-finished
	}
}
