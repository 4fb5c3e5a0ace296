package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// notifyInterrupts returns a context cancelled at the first SIGINT or
// SIGTERM and a channel closed at the second: commands stop gracefully at
// the first and at once at the second. After the second, signals get their
// default action again, so a third ends relay outright. stop releases the
// signals.
func notifyInterrupts() (ctx context.Context, stopNow <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	now := make(chan struct{})
	quit := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-quit:
			return
		}
		select {
		case <-sigs:
			close(now)
			signal.Reset(os.Interrupt, syscall.SIGTERM)
		case <-quit:
		}
	}()
	var once sync.Once
	return ctx, now, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(quit)
			cancel()
		})
	}
}
