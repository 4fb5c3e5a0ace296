// Package store is a small tree for the accuracy tests.
package store

import (
	"errors"
	"strings"
	"sync"
)

// Base is embedded.
type Base struct{ name string }

// Name returns the name.
func (b *Base) Name() string { return strings.ToLower(b.name) }

// Store keeps items.
type Store struct {
	Base
	mu    sync.Mutex
	items map[string]int
}

// New makes a store.
func New(name string) *Store {
	s := &Store{Base: Base{name: name}, items: map[string]int{}}
	s.reset()
	return s
}

func (s *Store) reset() { s.items = map[string]int{} }

// Put stores v.
func (s *Store) Put(k string, v int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k == "" {
		return errors.New("empty key")
	}
	if err := check(k); err != nil {
		return err
	}
	s.items[k] = v
	return nil
}

// Close closes the store.
func (s *Store) Close() error { s.reset(); return nil }

func check(k string) error {
	if len(k) > 10 {
		return New2("too long")
	}
	return nil
}

// New2 is a second constructor-like function.
func New2(msg string) error { return errors.New(msg) }

// Lock is a tree method named like sync.Mutex's.
type Locker struct{}

// Lock does nothing.
func (Locker) Lock() {}

// Cache stores too.
type Cache struct{ s *Store }

// Close closes the cache.
func (c *Cache) Close() error { return c.s.Close() }
